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
mod owners;
mod receiving;
mod sending;
mod stalled;

use budget::Draw;
pub use budget::{Budget, Charge, MAKE_WAY_AFTER_MS};
pub use direct::Line;
pub use owners::CopyFor;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{mpsc, Notify};

use crate::metrics::Metrics;
use crate::ws::{Outgoing, Spliced};

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

/// What a writer writes: a shared message, a message around a part shared with others (a
/// large document's welcome), a ready control frame (a pong), or the rest of a frame a
/// sender wrote the start of. The spliced one is boxed: rare, and every socket's writer
/// holds an `Out` while it writes.
pub enum Out {
    Message(Msg),
    Spliced(Box<Spliced>),
    Control(Bytes),
    /// The end of a frame the socket took the start of ([`direct`]): it goes before
    /// anything else, on the way to a close too, or the peer reads what follows as the
    /// frame's payload.
    Rest(Bytes),
}

impl Out {
    /// The bytes counted for this item in its queue (or drawn for it on the [`Budget`]):
    /// all of it, but for a part shared with others that is charged on the budget once
    /// for all of them (see [`HeldCopy`]).
    fn len(&self) -> usize {
        match self {
            Out::Message(m) => m.payload_len(),
            Out::Spliced(s) if s.middle().is_charged() => s.own_len(),
            Out::Spliced(s) => s.payload_len(),
            Out::Control(b) | Out::Rest(b) => b.len(),
        }
    }
}

impl From<Msg> for Out {
    fn from(m: Msg) -> Self {
        Out::Message(m)
    }
}

impl From<Spliced> for Out {
    fn from(s: Spliced) -> Self {
        Out::Spliced(Box::new(s))
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
    /// Since when the socket has held large messages or shared copies (ms since the Unix
    /// epoch; set when `drawn` goes up from 0), and how many bytes of them it has been given
    /// since: one taking them slower than [`budget::SLOWEST_HOLDER_BYTES_PER_SECOND`] makes
    /// way as one that takes nothing does.
    holding_since: AtomicU64,
    held_bytes: AtomicU64,
    /// Bytes of the node-wide [`Budget`] this socket holds.
    drawn: AtomicUsize,
    /// The client's address (its limit key): what its sockets draw on the node-wide
    /// [`Budget`] is counted against its share.
    address: std::sync::OnceLock<std::net::IpAddr>,
    /// Whose file's shared copy the socket holds (a socket is in one file): when that
    /// owner's share of the [`Budget`] is short, only such holders make way.
    copy_owner: std::sync::OnceLock<crate::store::Holder>,
}

/// One queued item; one drawn on the [`Budget`] gives its bytes back there, and one that
/// holds a charged copy shared with other sockets lets go of it when dropped.
struct Queued {
    out: Out,
    budget: Option<Arc<Budget>>,
    copy: Option<HeldCopy>,
}

/// A socket's hold on a copy shared with other sockets' welcomes and charged on the
/// [`Budget`] once for all of them: counted in the socket's `drawn` (so a socket that takes
/// nothing of it can be made to make way) and against its address's share, once however
/// many of the address's sockets hold it; both given back when dropped, that is when the
/// item is written, or dropped unwritten, whichever way.
pub(super) struct HeldCopy {
    holder: Arc<Shared>,
    budget: Arc<Budget>,
    copy: Arc<crate::ws::Middle>,
}

impl Drop for HeldCopy {
    fn drop(&mut self) {
        let n = self.copy.len();
        self.holder.drawn.fetch_sub(n, Ordering::AcqRel);
        if let Some(&address) = self.holder.address.get() {
            self.budget.let_go_of(address, &self.copy);
        }
    }
}

impl Queued {
    fn new(out: Out, budget: Option<Arc<Budget>>) -> Self {
        Self {
            out,
            budget,
            copy: None,
        }
    }

    /// Gives an item's own bytes back to where they were counted: the node-wide
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
    /// Copies shared with others that were taken and are being written: held until then.
    copies_writing: Vec<HeldCopy>,
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
        copy_owner: std::sync::OnceLock::new(),
        write_waiting_since: AtomicU64::new(0),
        holding_since: AtomicU64::new(0),
        held_bytes: AtomicU64::new(0),
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
            copies_writing: Vec::new(),
            close: CloseWatch(shared),
        },
    )
}

#[cfg(test)]
mod tests;
