//! Reader tests: large frames wait for the allowance; small ones never ask.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Refuses until `open`, counting what it was asked.
#[derive(Default)]
struct Gate {
    open: std::sync::atomic::AtomicBool,
    asked: AtomicUsize,
    /// Bytes admitted and not yet released.
    held: AtomicUsize,
    /// Bytes of text compressed messages became.
    inflated: AtomicUsize,
}

impl Allowance for Gate {
    fn admits(&self, bytes: usize) -> bool {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let open = self.open.load(Ordering::SeqCst);
        if open {
            self.held.fetch_add(bytes, Ordering::SeqCst);
        }
        open
    }

    fn release(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::SeqCst);
    }

    fn inflated(&self, bytes: usize) {
        self.inflated.fetch_add(bytes, Ordering::SeqCst);
    }
}

/// Text that compressed messages became is told to the allowance, fragmented or not; plain
/// text is not (its frames' sizes said it).
#[tokio::test]
async fn inflated_text_is_told_to_the_allowance() {
    let message = "a fairly compressible line of text; ".repeat(2_000);
    let data = client_deflate(message.as_bytes());
    assert!(data.len() < LARGE_FRAME, "small on the wire");
    let (a, b) = data.split_at(data.len() / 2);
    let wire = [
        frame(FIN, true, opcode::TEXT, &data),
        frame(MORE, true, opcode::TEXT, a),
        frame(FIN, false, opcode::CONTINUATION, b),
        text("plain"),
    ]
    .concat();
    let mut r = reader(wire, limits(1 << 20), true);
    let gate = Arc::new(Gate::default());
    gate.open.store(true, Ordering::SeqCst);
    r.set_allowance(gate.clone());
    for _ in 0..3 {
        assert!(matches!(r.next().await, Ok(Incoming::Text(_))));
    }
    assert_eq!(gate.inflated.load(Ordering::SeqCst), 2 * message.len());
    assert_eq!(gate.asked.load(Ordering::SeqCst), 0, "no frame was large");
}

#[tokio::test]
async fn a_large_frame_is_read_once_the_allowance_admits_it() {
    let large = "x".repeat(LARGE_FRAME + 1);
    let wire = [text("small"), text(&large), text("after")].concat();
    let (mut client, server) = duplex(1 << 20);
    client.write_all(&wire).await.unwrap();
    let mut r = Reader::new(server, limits(1 << 20), false);
    let gate = Arc::new(Gate::default());
    r.set_allowance(gate.clone());

    assert!(matches!(r.next().await, Ok(Incoming::Text(t)) if t == "small"));
    assert_eq!(
        gate.asked.load(Ordering::SeqCst),
        0,
        "small frames never ask"
    );
    // Refused: the reader waits (and may be dropped meanwhile, as in a select!).
    assert!(tokio::time::timeout(Duration::from_millis(200), r.next())
        .await
        .is_err());
    assert!(gate.asked.load(Ordering::SeqCst) >= 2, "it asks again");
    assert!(
        r.buf.len() < LARGE_FRAME,
        "nothing past the header was read"
    );
    gate.open.store(true, Ordering::SeqCst);
    assert!(matches!(r.next().await, Ok(Incoming::Text(t)) if t == large));
    let asked = gate.asked.load(Ordering::SeqCst);
    assert!(matches!(r.next().await, Ok(Incoming::Text(t)) if t == "after"));
    assert_eq!(
        gate.asked.load(Ordering::SeqCst),
        asked,
        "asked once per frame"
    );
}

#[tokio::test]
async fn a_fragmented_message_asks_once_it_is_large() {
    let piece = "y".repeat(40_000);
    let wire = [
        frame(MORE, false, opcode::TEXT, piece.as_bytes()),
        frame(FIN, false, opcode::CONTINUATION, piece.as_bytes()),
    ]
    .concat();
    let (mut client, server) = duplex(1 << 20);
    client.write_all(&wire).await.unwrap();
    let mut r = Reader::new(server, limits(1 << 20), false);
    let gate = Arc::new(Gate::default());
    r.set_allowance(gate.clone());
    // The first 40 KB are small on their own; the next 40 KB make the message large.
    assert!(tokio::time::timeout(Duration::from_millis(200), r.next())
        .await
        .is_err());
    assert!(
        gate.asked.load(Ordering::SeqCst) >= 1,
        "the second piece asks"
    );
    assert!(r.buf.len() < 50_000, "the second piece was not read");
    gate.open.store(true, Ordering::SeqCst);
    let whole = piece.repeat(2);
    assert!(matches!(r.next().await, Ok(Incoming::Text(t)) if t == whole));
}

#[tokio::test]
async fn what_a_message_held_is_released_when_it_ends_or_the_reader_goes() {
    let piece = "z".repeat(40_000);
    let whole = text(&"w".repeat(LARGE_FRAME + 1));
    let unfinished = [
        frame(MORE, false, opcode::TEXT, piece.as_bytes()),
        frame(MORE, false, opcode::CONTINUATION, piece.as_bytes()),
    ]
    .concat();
    let (mut client, server) = duplex(1 << 20);
    client
        .write_all(&[whole, unfinished].concat())
        .await
        .unwrap();
    let mut r = Reader::new(server, limits(1 << 20), false);
    let gate = Arc::new(Gate::default());
    gate.open.store(true, Ordering::SeqCst);
    r.set_allowance(gate.clone());
    assert!(matches!(r.next().await, Ok(Incoming::Text(_))));
    assert_eq!(
        gate.held.load(Ordering::SeqCst),
        0,
        "released once the message was whole"
    );
    // The fragmented one never ends: held while the reader waits, released when it goes.
    assert!(tokio::time::timeout(Duration::from_millis(100), r.next())
        .await
        .is_err());
    assert!(gate.held.load(Ordering::SeqCst) > 0);
    drop(r);
    assert_eq!(gate.held.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn small_fragments_ask_once_their_message_is_large() {
    // 100-byte pieces, many to a read: the message passes 64 KiB inside the buffer.
    let piece = [b'q'; 100];
    let mut wire = frame(MORE, false, opcode::TEXT, &piece);
    for _ in 0..1_000 {
        wire.extend(frame(MORE, false, opcode::CONTINUATION, &piece));
    }
    wire.extend(frame(FIN, false, opcode::CONTINUATION, &piece));
    let (mut client, server) = duplex(1 << 20);
    client.write_all(&wire).await.unwrap();
    let mut r = Reader::new(server, limits(1 << 20), false);
    let gate = Arc::new(Gate::default());
    r.set_allowance(gate.clone());
    assert!(tokio::time::timeout(Duration::from_millis(200), r.next())
        .await
        .is_err());
    assert!(gate.asked.load(Ordering::SeqCst) >= 1, "it asked");
    gate.open.store(true, Ordering::SeqCst);
    assert!(matches!(r.next().await, Ok(Incoming::Text(t)) if t.len() == 100_200));
    assert_eq!(gate.held.load(Ordering::SeqCst), 0, "released at its end");
}
