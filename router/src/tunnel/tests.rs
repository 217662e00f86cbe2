use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::metrics::Metrics;
use crate::sockets::Tracker;

/// Guards every wait of these tests against a hang; never a measure.
const HANG: Duration = Duration::from_secs(20);

/// A connected pair of loopback sockets: (the tunnel's end as std, the test's end).
async fn pair() -> (std::net::TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (outer, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let inner = accepted.unwrap().0.into_std().unwrap();
    (inner, outer.unwrap())
}

/// A tunnel between a test client and a test node, carried on its own task.
struct Setup {
    client: TcpStream,
    node: TcpStream,
    tracker: Arc<Tracker>,
    carried: tokio::task::JoinHandle<io::Result<End>>,
}

async fn setup(preread: Option<&[u8]>) -> Setup {
    let (client_inner, client) = pair().await;
    let (node_inner, node) = pair().await;
    let tracker = Tracker::new(Arc::new(Metrics::new()));
    let guard = tracker.socket(&atrium_coordinator::NodeId::parse("n0").unwrap());
    let sockets = Sockets {
        client: client_inner,
        node: node_inner,
        preread: preread.map(Bytes::copy_from_slice),
        node_ended: false,
    };
    let carried = tokio::spawn(async move {
        let end = carry(sockets, Some(guard.closing()), HANG).await;
        drop(guard);
        end
    });
    Setup {
        client,
        node,
        tracker,
        carried,
    }
}

/// A server frame (unmasked) or, with `mask`, a client frame, with `len` payload bytes
/// counting up from `seed`.
fn frame(len: usize, seed: u8, mask: bool) -> Vec<u8> {
    let mut f = vec![0x82];
    let m = if mask { 0x80 } else { 0 };
    match len {
        n if n < 126 => f.push(m | n as u8),
        n if n <= 0xffff => {
            f.push(m | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(m | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if mask {
        f.extend_from_slice(&[9, 8, 7, 6]);
    }
    f.extend((0..len).map(|i| seed.wrapping_add(i as u8)));
    f
}

/// Many frames of many sizes, one after the other.
fn frames(count: usize, mask: bool) -> Vec<u8> {
    let sizes = [1, 0, 17, 125, 126, 300, 4_000, 65_536, 90_000, 3];
    (0..count)
        .flat_map(|i| frame(sizes[i % sizes.len()], i as u8, mask))
        .collect()
}

/// Writes `bytes` in pieces of odd sizes, so reads on the other side split them anywhere.
async fn write_in_pieces(to: &mut (impl AsyncWriteExt + Unpin), bytes: &[u8]) {
    let pieces = [1, 7, 1_000, 3, 65_537, 250, 13];
    let (mut at, mut i) = (0, 0);
    while at < bytes.len() {
        let end = (at + pieces[i % pieces.len()]).min(bytes.len());
        to.write_all(&bytes[at..end]).await.unwrap();
        at = end;
        i += 1;
    }
}

async fn read_exactly(from: &mut (impl AsyncReadExt + Unpin), len: usize) -> Vec<u8> {
    let mut got = vec![0; len];
    tokio::time::timeout(HANG, from.read_exact(&mut got))
        .await
        .expect("the bytes came")
        .expect("the bytes were read");
    got
}

async fn read_to_end(from: &mut (impl AsyncReadExt + Unpin)) -> Vec<u8> {
    let mut got = Vec::new();
    tokio::time::timeout(HANG, from.read_to_end(&mut got))
        .await
        .expect("the stream ended")
        .expect("the stream was read");
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_frames_both_ways_arrive_whole_and_in_order() {
    let Setup {
        client,
        node,
        carried,
        ..
    } = setup(None).await;
    let down = frames(400, false);
    let up = frames(300, true);
    let (mut client_r, mut client_w) = client.into_split();
    let (mut node_r, mut node_w) = node.into_split();
    let (d, u) = (down.clone(), up.clone());
    let node_writes = tokio::spawn(async move {
        write_in_pieces(&mut node_w, &d).await;
        node_w
    });
    let client_writes = tokio::spawn(async move {
        write_in_pieces(&mut client_w, &u).await;
        client_w
    });
    let (at_client, at_node) = tokio::join!(
        read_exactly(&mut client_r, down.len()),
        read_exactly(&mut node_r, up.len())
    );
    assert!(
        at_client == down,
        "the node's bytes reached the client changed"
    );
    assert!(at_node == up, "the client's bytes reached the node changed");
    // The node's side stays open; the client leaves: the node's side is ended too.
    let _node_w = node_writes.await.unwrap();
    drop(client_writes.await.unwrap());
    drop(client_r);
    assert_eq!(read_to_end(&mut node_r).await, b"");
    assert_eq!(carried.await.unwrap().unwrap(), End::Client);
}

#[tokio::test]
async fn bytes_read_before_the_tunnel_go_first() {
    let mut s = setup(Some(b"early ")).await;
    s.node.write_all(b"late").await.unwrap();
    assert_eq!(read_exactly(&mut s.client, 10).await, b"early late");
}

#[tokio::test]
async fn the_nodes_end_ends_the_clients_side_after_its_last_bytes() {
    let mut s = setup(None).await;
    let last = frame(70_000, 5, false);
    s.node.write_all(&last).await.unwrap();
    drop(s.node);
    assert!(read_to_end(&mut s.client).await == last);
    assert_eq!(s.carried.await.unwrap().unwrap(), End::Node);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_mid_frame_sends_1012_after_the_frame_in_progress() {
    let mut s = setup(None).await;
    let first = frame(5_000, 1, false);
    let second = frame(40, 2, false);
    // Half of a frame reaches the client: the tunnel is inside it.
    s.node.write_all(&first[..2_500]).await.unwrap();
    assert!(read_exactly(&mut s.client, 2_500).await == first[..2_500]);
    assert_eq!(s.tracker.close_all(), 1);
    // The node goes on: the rest of its frame, and another.
    s.node.write_all(&first[2_500..]).await.unwrap();
    s.node.write_all(&second).await.unwrap();
    let rest = read_to_end(&mut s.client).await;
    let close = close_frame(CloseCode::ServiceRestart, "router restarting");
    let mut expected = first[2_500..].to_vec();
    expected.extend_from_slice(&close);
    assert!(
        rest == expected,
        "got {} bytes, ending {:?}",
        rest.len(),
        &rest[rest.len().saturating_sub(24)..]
    );
    assert_eq!(
        read_to_end(&mut s.node).await,
        b"",
        "the node's side is ended"
    );
    assert_eq!(s.carried.await.unwrap().unwrap(), End::Closed);
}

#[tokio::test]
async fn closing_between_frames_sends_1012_at_once() {
    let mut s = setup(None).await;
    let whole = frame(300, 1, false);
    s.node.write_all(&whole).await.unwrap();
    assert!(read_exactly(&mut s.client, whole.len()).await == whole);
    s.tracker.close_all();
    let close = close_frame(CloseCode::ServiceRestart, "router restarting");
    assert_eq!(read_to_end(&mut s.client).await, close.to_vec());
    assert_eq!(s.carried.await.unwrap().unwrap(), End::Closed);
}

/// KiB `writer` writes, in frames of 60 KB (`mask`ed as a client's), before a write has to
/// wait half a second: what the far side and the router between took. The writer's own send
/// buffer is made small, so little of it is its own.
async fn written_before_waiting(writer: TcpStream, mask: bool) -> usize {
    socket2::SockRef::from(&writer)
        .set_send_buffer_size(16 * 1024)
        .unwrap();
    let (_reader, mut writer) = writer.into_split();
    let chunk = frame(60_000, 1, mask);
    let mut taken = 0usize;
    while let Ok(Ok(())) =
        tokio::time::timeout(Duration::from_millis(500), writer.write_all(&chunk)).await
    {
        taken += chunk.len();
        assert!(taken < 64 << 20, "the writes never stopped");
    }
    taken / 1024
}

/// A client that never reads holds little of the router's kernel memory: the router's side of
/// the client's connection keeps at most [`UNSENT`] unsent and its side of the node's
/// receives at most [`NODE_RECEIVE`], so the node soon cannot write (and its own bounds act).
/// Left to the kernel, both grew to megabytes a socket (the fifteenth review: 4.5 MiB).
#[tokio::test]
async fn a_client_that_never_reads_soon_stops_the_nodes_writes() {
    let Setup { node, client, .. } = setup(None).await;
    let taken_kib = written_before_waiting(node, false).await;
    println!(
        "FIGURE a client that never reads: the node wrote {taken_kib} KiB before it had to wait"
    );
    assert!(
        taken_kib < 2048,
        "the router's kernel took {taken_kib} KiB for a client that reads nothing"
    );
    drop(client);
}

/// The other way: a node that does not read (it paces a client) soon stops the client's
/// writes, the router holding little of them. A client flooding pings at a pacing node parked
/// 5-8 MiB a socket in the router's kernel buffers (the fifteenth review).
#[tokio::test]
async fn a_node_that_does_not_read_soon_stops_the_clients_writes() {
    let Setup { node, client, .. } = setup(None).await;
    let taken_kib = written_before_waiting(client, true).await;
    println!(
        "FIGURE a node that does not read: the client wrote {taken_kib} KiB before it had to wait"
    );
    assert!(
        taken_kib < 2048,
        "the router's kernel took {taken_kib} KiB for a node that reads nothing"
    );
    drop(node);
}
