use bytes::Bytes;

use super::*;

fn frames(count: usize, each: usize) -> Vec<Bytes> {
    (0..count).map(|_| frame::text(&vec![b'x'; each])).collect()
}

/// A batch of `count` text frames of `each` bytes.
fn batch_of(count: usize, each: usize) -> Batch {
    let mut batch = Batch::default();
    for f in frames(count, each) {
        batch.push_frame(f);
    }
    batch
}

#[tokio::test]
async fn the_gathering_buffer_shrinks_back_after_a_large_batch() {
    let mut io: WriteIo = Box::new(tokio::io::sink());
    // A large batch (under GATHER, so gathered) grows the buffer...
    let mut batch = batch_of(40, 1000);
    batch.write(&mut io).await.unwrap();
    assert!(batch.taken() > 40_000, "{} bytes taken", batch.taken());
    // ...small ones after it must not keep it.
    for _ in 0..3 {
        batch.clear();
        for f in frames(3, 100) {
            batch.push_frame(f);
        }
        batch.write(&mut io).await.unwrap();
    }
    assert!(
        batch.gather_capacity() <= batch::GATHER_KEEP,
        "{}",
        batch.gather_capacity()
    );
}

#[tokio::test]
async fn small_batches_reuse_the_buffer() {
    let mut io: WriteIo = Box::new(tokio::io::sink());
    let mut batch = batch_of(3, 100);
    batch.write(&mut io).await.unwrap();
    let kept = batch.gather_ptr();
    batch.clear();
    for f in frames(2, 120) {
        batch.push_frame(f);
    }
    batch.write(&mut io).await.unwrap();
    assert_eq!(batch.gather_ptr(), kept);
}

/// What is left of the frame a cut write stopped in: nothing between frames, the frame's
/// end (across a spliced frame's pieces) within one.
#[test]
fn a_cut_write_leaves_the_rest_of_its_frame_and_no_more() {
    let mut batch = Batch::default();
    batch.push_frame(Bytes::from_static(b"AAAAAAAAAA")); // 0..10
    batch.push(Bytes::from_static(b"bbb")); // 10..13
    batch.push(Bytes::from_static(b"BBBB")); // 13..17
    batch.push(Bytes::from_static(b"bbb")); // 17..20
    batch.frame_done();
    batch.push_frame(Bytes::from_static(b"CCCCCC")); // 20..26
    let rest_at = |batch: &mut Batch, taken: usize| {
        batch.set_taken(taken);
        batch.unfinished().concat()
    };
    assert_eq!(rest_at(&mut batch, 0), b"");
    assert_eq!(rest_at(&mut batch, 4), b"AAAAAA");
    assert_eq!(rest_at(&mut batch, 10), b"");
    assert_eq!(rest_at(&mut batch, 11), b"bbBBBBbbb");
    assert_eq!(rest_at(&mut batch, 13), b"BBBBbbb");
    assert_eq!(rest_at(&mut batch, 15), b"BBbbb");
    assert_eq!(rest_at(&mut batch, 19), b"b");
    assert_eq!(rest_at(&mut batch, 20), b"");
    assert_eq!(rest_at(&mut batch, 25), b"C");
    assert_eq!(rest_at(&mut batch, 26), b"");
}

/// A batch that begins with the rest of a frame a sender began (`Out::Rest`), of which
/// the socket took nothing before a close: that rest is what is unfinished (the batch's
/// start is no frame's start), not nothing (review 25).
#[test]
fn a_batch_that_begins_with_a_senders_rest_keeps_it_when_nothing_was_taken() {
    let mut batch = Batch::default();
    wire(
        Out::Rest(Bytes::from_static(b"rest of F")),
        false,
        &mut batch,
    );
    wire(Out::Control(frame::ping(&[])), false, &mut batch);
    batch.set_taken(0);
    assert_eq!(batch.unfinished().concat(), b"rest of F");
    batch.set_taken(4);
    assert_eq!(batch.unfinished().concat(), b" of F");
    batch.set_taken(9);
    assert_eq!(batch.unfinished().concat(), b"");
}

/// A loopback connection whose far end does not read: small buffers on both sides, so a
/// message of 256 KiB is taken only in part. The node's sending half, and the peer.
async fn a_peer_that_stops_reading() -> (tokio::net::tcp::OwnedWriteHalf, tokio::net::TcpStream) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let peer = tokio::net::TcpSocket::new_v4().unwrap();
    peer.set_recv_buffer_size(4096).unwrap();
    let peer = peer.connect(listener.local_addr().unwrap()).await.unwrap();
    let (node, _) = listener.accept().await.unwrap();
    socket2::SockRef::from(&node)
        .set_send_buffer_size(4096)
        .unwrap();
    let (_read, write) = node.into_split();
    (write, peer)
}

/// A server frame as the peer reads it: its opcode and payload.
async fn read_frame(peer: &mut tokio::net::TcpStream) -> Option<(u8, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut head = [0u8; 2];
    peer.read_exact(&mut head).await.ok()?;
    assert_eq!(head[1] & 0x80, 0, "a server frame is not masked");
    let len = match head[1] & 0x7f {
        126 => u64::from(peer.read_u16().await.ok()?),
        127 => peer.read_u64().await.ok()?,
        n => u64::from(n),
    };
    let mut payload = vec![0u8; usize::try_from(len).ok()?];
    peer.read_exact(&mut payload).await.ok()?;
    Some((head[0] & 0x0f, payload))
}

/// Everything the peer reads once it reads again: each frame's opcode and payload, up to
/// and with the close frame (or up to a stream that ends or breaks).
async fn read_to_close(peer: &mut tokio::net::TcpStream) -> Vec<(u8, Vec<u8>)> {
    let mut got = Vec::new();
    let read = async {
        while let Some((op, payload)) = read_frame(peer).await {
            got.push((op, payload));
            if op == 0x8 {
                break;
            }
        }
    };
    let _ = timeout(Duration::from_secs(10), read).await;
    got
}

/// A writer on a socket whose peer does not read (until the test reads), with the outbox
/// that feeds it: `attached`, senders write to the socket themselves when they can.
struct Writing {
    outbox: crate::outbox::Outbox,
    peer: tokio::net::TcpStream,
    writer: tokio::task::JoinHandle<()>,
}

/// Starts a [`Writing`]; its writer has not run when this returns.
async fn writing(attached: bool, ping_every: Duration) -> Writing {
    let metrics = crate::metrics::Metrics::new();
    let (outbox, mut rx) = crate::outbox::outbox(64, 8 << 20, metrics.clone());
    let (half, peer) = a_peer_that_stops_reading().await;
    let mut io: WriteIo = if attached {
        let half = std::sync::Arc::new(half);
        outbox.attach(half.clone(), false);
        super::super::io::shared_half(half, Duration::from_secs(30), &outbox)
    } else {
        Box::new(half)
    };
    let writer = tokio::spawn(async move {
        write(&mut io, &mut rx, false, ping_every, &metrics).await;
    });
    Writing {
        outbox,
        peer,
        writer,
    }
}

impl Writing {
    /// What the peer reads once it reads again: `text`'s frame whole, then a close frame
    /// with `code`, and nothing between.
    async fn reads_whole_then_closed(mut self, text: &str, code: CloseCode) {
        let got = read_to_close(&mut self.peer).await;
        self.writer.await.unwrap();
        let ops: Vec<u8> = got.iter().map(|(op, _)| *op).collect();
        assert_eq!(ops, [0x1, 0x8], "a text frame, then the close");
        assert!(got[0].1 == text.as_bytes(), "the frame arrived whole");
        let close = &got[1].1;
        assert_eq!(u16::from_be_bytes([close[0], close[1]]), code.code());
    }

    /// Hands `text` to the outbox as a room would (written at once when it can be).
    fn send(&self, text: &str) {
        assert!(self.outbox.send(crate::outbox::shared(text.to_owned())));
    }

    /// The next frame the peer reads, whole.
    async fn next_frame(&mut self) -> (u8, Vec<u8>) {
        timeout(Duration::from_secs(10), read_frame(&mut self.peer))
            .await
            .expect("a frame within 10 s")
            .expect("a whole frame")
    }
}

/// Pings far apart: none comes in a test's way.
const NO_PING: Duration = Duration::from_secs(60);

/// A close asked for while the writer is blocked in the middle of a large frame (the peer
/// stopped reading, then reads again): the peer gets the whole frame, then the close
/// frame; what was queued behind is dropped. Before, the close frame was written where the
/// cut write stopped, and the peer read it as part of the frame's payload.
#[tokio::test]
async fn a_close_that_cuts_a_write_short_comes_after_the_frame_it_cut() {
    let w = writing(false, NO_PING).await;
    let big = "x".repeat(256 << 10);
    w.send(&big);
    // The writer takes what the socket has room for, and waits.
    tokio::time::sleep(Duration::from_millis(200)).await;
    w.send("behind");
    w.outbox.close(CloseCode::ServiceRestart, "restarting");
    w.reads_whole_then_closed(&big, CloseCode::ServiceRestart)
        .await;
}

/// A sender wrote the start of a large frame itself (the socket took part of it) and the
/// socket is closed for being too slow before the writer takes the rest: the queue is
/// dropped, but not the rest of that frame, which goes before the close frame.
#[tokio::test]
async fn a_frame_a_sender_began_is_finished_before_a_too_slow_close() {
    let w = writing(true, NO_PING).await;
    // Written here, in part, by this task; the writer has not run since.
    let big = "y".repeat(256 << 10);
    w.send(&big);
    w.send("behind");
    w.outbox.close(CloseCode::TooSlow, "too slow");
    w.reads_whole_then_closed(&big, CloseCode::TooSlow).await;
}

/// A sender wrote the start of a large frame itself, the writer took the rest and the
/// socket took part of it before the socket was closed for being too slow: the rest of the
/// frame still goes before the close frame. (The socket takes a little of the rest here;
/// when it takes none, the batch must still know the rest continues a frame:
/// `a_batch_that_begins_with_a_senders_rest_keeps_it_when_nothing_was_taken`.)
#[tokio::test]
async fn a_frame_a_sender_began_is_finished_after_the_writer_took_its_rest() {
    let w = writing(true, NO_PING).await;
    let big = "z".repeat(256 << 10);
    w.send(&big);
    // The writer takes the rest and waits for the socket.
    tokio::time::sleep(Duration::from_millis(200)).await;
    w.outbox.close(CloseCode::TooSlow, "too slow");
    w.reads_whole_then_closed(&big, CloseCode::TooSlow).await;
}

/// A ping comes due while the rest of a frame a sender began waits in the queue: the ping
/// goes after that frame, never inside it (review 25: the ping was written as soon as it was
/// due, into the payload of the frame whose rest waited). The order is made, not waited
/// for: the sender and the writer's ping are woken in one turn of the runtime's driver
/// (readiness before timers), so the sender writes the frame's start and queues its rest
/// before the writer, its ping due, runs.
#[tokio::test]
async fn a_ping_waits_for_the_frame_a_sender_began() {
    let mut w = writing(true, Duration::from_millis(400)).await;
    let big = "p".repeat(256 << 10);
    let (mut bell, rung) = tokio::net::UnixStream::pair().unwrap();
    let sender = {
        let (outbox, big) = (w.outbox.clone(), big.clone());
        tokio::spawn(async move {
            rung.readable().await.unwrap();
            assert!(outbox.send(crate::outbox::shared(big)));
        })
    };
    // The writer waits for its queue and its ping; the sender for the bell.
    tokio::task::yield_now().await;
    std::thread::sleep(Duration::from_millis(700));
    tokio::io::AsyncWriteExt::write_all(&mut bell, b"!")
        .await
        .unwrap();
    let (op, payload) = w.next_frame().await;
    assert_eq!(op, 0x1, "the text frame comes first");
    assert!(payload == big.as_bytes(), "the frame arrived whole");
    assert_eq!(w.next_frame().await.0, 0x9, "then the ping");
    sender.await.unwrap();
    w.outbox.close(CloseCode::ServiceRestart, "done");
    w.writer.await.unwrap();
}

/// The frame `framed` makes of `out`, in one buffer.
async fn framed_one(out: Out, deflate: bool, metrics: &crate::metrics::Metrics) -> Vec<u8> {
    let mut batch = Batch::default();
    framed(out, deflate, metrics, &mut batch).await;
    batch.bytes()
}

/// A large message is compressed on the bulk lane, once: a second socket takes it ready.
/// A small one, or one for a socket without deflate, is framed here.
#[tokio::test]
async fn a_large_message_is_compressed_on_the_lane_once() {
    let metrics = crate::metrics::Metrics::new();
    let big = crate::outbox::shared("x".repeat(200_000));
    let before = metrics.lane_runs.get();
    let first = framed_one(Out::Message(big.clone()), true, &metrics).await;
    assert_eq!(
        metrics.lane_runs.get(),
        before + 1,
        "compressed on the lane"
    );
    assert!(first.len() < 10_000, "{} bytes", first.len());
    let second = framed_one(Out::Message(big.clone()), true, &metrics).await;
    assert_eq!(second, first);
    let plain = framed_one(Out::Message(big), false, &metrics).await;
    assert!(plain.len() > 200_000);
    let small = crate::outbox::shared("y".repeat(1000));
    framed_one(Out::Message(small), true, &metrics).await;
    assert_eq!(
        metrics.lane_runs.get(),
        before + 1,
        "nothing else went to the lane"
    );
}

/// A large document shared by many welcomes is compressed on the lane once; each welcome's
/// small head is then compressed where it is written.
#[tokio::test]
async fn a_shared_document_is_compressed_on_the_lane_once_for_every_welcome() {
    use crate::ws::{Middle, Spliced};
    let metrics = crate::metrics::Metrics::new();
    let doc = Middle::new("x".repeat(200_000), None);
    let welcome = |you: &'static str| Out::from(Spliced::new(you.into(), doc.clone(), "}"));
    let before = metrics.lane_runs.get();
    let first = framed_one(welcome("{\"you\":\"a\",\"doc\":"), true, &metrics).await;
    assert_eq!(metrics.lane_runs.get(), before + 1);
    assert!(first.len() < 10_000, "{} bytes", first.len());
    let second = framed_one(welcome("{\"you\":\"b\",\"doc\":"), true, &metrics).await;
    assert_eq!(metrics.lane_runs.get(), before + 1, "taken ready");
    assert_eq!(first.len(), second.len());
    let plain = framed_one(welcome("{\"doc\":"), false, &metrics).await;
    assert_eq!(plain.len(), 10 + "{\"doc\":".len() + 200_000 + 1);
}
