//! A socket's send queue, as rooms see it.
//!
//! Rooms never write to a socket themselves: they push shared, already-encoded
//! messages ([`Msg`]: the wire frame built once per room message, and its
//! compressed form built at most once) into each person's bounded queue, and the
//! socket's writer drains it. A queue that overflows closes its socket with 4008
//! instead of slowing the room (invariant 4 in docs/architecture.md). When the
//! queue is empty and the writer idle, a sender writes to the socket itself,
//! without waiting ([`direct`]): no wake-up of the writer for a message the socket
//! takes at once.

mod budget;
mod closing;
mod direct;
mod receiving;
mod sending;

pub use budget::Budget;
use budget::Draw;
pub use direct::Line;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{mpsc, Notify};

use crate::metrics::Metrics;
use crate::ws::Outgoing;

/// Identifies one socket for the whole life of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

impl ConnId {
    pub fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ConnId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A message encoded once and shared by every socket it goes to.
pub type Msg = Arc<Outgoing>;

/// A text message as a shared [`Msg`], compressed for deflate sockets when large.
pub fn shared(text: impl Into<Bytes>) -> Msg {
    Outgoing::new(text.into(), true)
}

/// What a writer writes: a shared message, or a ready control frame (a pong).
pub enum Out {
    Message(Msg),
    Control(Bytes),
}

impl Out {
    fn len(&self) -> usize {
        match self {
            Out::Message(m) => m.payload_len(),
            Out::Control(b) => b.len(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseRequest {
    pub code: u16,
    pub reason: String,
}

/// What the queue and its writer share.
struct Shared {
    /// The node's metrics: overflows and closes are counted there.
    metrics: Arc<Metrics>,
    close: Mutex<Option<CloseRequest>>,
    /// Set once `close` holds a request: read on every message, locked never.
    closing: AtomicBool,
    notify: Notify,
    /// Bytes queued and not yet taken by the writer.
    bytes: AtomicUsize,
    max_bytes: usize,
    /// While a welcome waits to be durable, everything else waits behind it here
    /// (the contract: the welcome comes first, then the stream).
    held: AtomicBool,
    gate: Mutex<Option<Vec<Out>>>,
    /// The socket, for senders that write to it themselves (see [`direct`]).
    line: Mutex<Line>,
    /// Since when the socket's writer has waited for its peer to take bytes (ms since the
    /// Unix epoch), 0 while it is not waiting: a socket holding a large message drawn on
    /// the node-wide [`Budget`] that takes nothing for long makes way for others.
    write_waiting_since: AtomicU64,
    /// Bytes of the node-wide [`Budget`] this socket holds.
    drawn: AtomicUsize,
    /// The client's address (its limit key): what its sockets draw on the node-wide
    /// [`Budget`] is counted against its share.
    address: std::sync::OnceLock<std::net::IpAddr>,
}

/// One queued item; one drawn on the [`Budget`] gives its bytes back there.
struct Queued {
    out: Out,
    budget: Option<Arc<Budget>>,
}

impl Queued {
    /// Gives an item's bytes back to where they were counted: the node-wide
    /// budget, or the queue.
    fn give_back(&self, shared: &Shared, len: usize) {
        match &self.budget {
            Some(budget) => {
                shared.drawn.fetch_sub(len, Ordering::AcqRel);
                budget.give(shared.address.get().copied(), len)
            }
            None => {
                shared.bytes.fetch_sub(len, Ordering::AcqRel);
            }
        }
    }
}

/// The sending side, cloned into rooms and indexes.
#[derive(Clone)]
pub struct Outbox {
    pub id: ConnId,
    frames: mpsc::Sender<Queued>,
    shared: Arc<Shared>,
}

/// The socket writer's side.
pub struct OutboxReceiver {
    frames: mpsc::Receiver<Queued>,
    /// What one take drew from the channel, kept for the next take.
    taken: Vec<Queued>,
    /// Large messages taken and being written: what they drew on the node-wide [`Budget`]
    /// stays drawn until they are written ([`OutboxReceiver::done_writing`]), so a socket
    /// that stops reading in the middle of one holds it against its address's share.
    writing: Vec<(Arc<Budget>, usize)>,
    pub close: CloseWatch,
}

/// Where the writer learns that a close was asked for.
#[derive(Clone)]
pub struct CloseWatch(Arc<Shared>);

/// A queue of at most `frames` items and `bytes` bytes.
pub fn outbox(frames: usize, bytes: usize, metrics: Arc<Metrics>) -> (Outbox, OutboxReceiver) {
    let (tx, rx) = mpsc::channel(frames.max(1));
    let shared = Arc::new(Shared {
        metrics,
        close: Mutex::new(None),
        closing: AtomicBool::new(false),
        notify: Notify::new(),
        bytes: AtomicUsize::new(0),
        max_bytes: bytes.max(1),
        held: AtomicBool::new(false),
        gate: Mutex::new(None),
        line: Mutex::new(Line::default()),
        address: std::sync::OnceLock::new(),
        write_waiting_since: AtomicU64::new(0),
        drawn: AtomicUsize::new(0),
    });
    (
        Outbox {
            id: ConnId::next(),
            frames: tx,
            shared: shared.clone(),
        },
        OutboxReceiver {
            frames: rx,
            taken: Vec::new(),
            writing: Vec::new(),
            close: CloseWatch(shared),
        },
    )
}

#[cfg(test)]
mod tests;
