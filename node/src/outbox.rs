//! A socket's send queue, as rooms see it.
//!
//! Rooms never write to a socket themselves: they push shared, already-encoded
//! messages ([`Msg`]: the wire frame built once per room message, and its
//! compressed form built at most once) into each person's bounded queue, and the
//! socket's writer drains it. A queue that overflows closes its socket with 4008
//! instead of slowing the room (invariant 4 in docs/architecture.md).

use atrium_protocol::CloseCode;
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
    notify: Notify,
    /// Bytes queued and not yet taken by the writer.
    bytes: AtomicUsize,
    max_bytes: usize,
    /// While a welcome waits to be durable, everything else waits behind it here
    /// (the contract: the welcome comes first, then the stream).
    held: AtomicBool,
    gate: Mutex<Option<Vec<Out>>>,
}

/// A node-wide allowance for messages bigger than a send queue may hold (large
/// welcomes), so that a burst of joins to a big file cannot take all memory.
pub struct Budget {
    left: AtomicUsize,
}

impl Budget {
    pub fn new(bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicUsize::new(bytes),
        })
    }

    fn take(&self, n: usize) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(n)
            })
            .is_ok()
    }

    fn give(&self, n: usize) {
        self.left.fetch_add(n, Ordering::AcqRel);
    }
}

/// One queued item; one drawn on the [`Budget`] gives its bytes back there.
struct Queued {
    out: Out,
    budget: Option<Arc<Budget>>,
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
        notify: Notify::new(),
        bytes: AtomicUsize::new(0),
        max_bytes: bytes.max(1),
        held: AtomicBool::new(false),
        gate: Mutex::new(None),
    });
    (
        Outbox {
            id: ConnId::next(),
            frames: tx,
            shared: shared.clone(),
        },
        OutboxReceiver {
            frames: rx,
            close: CloseWatch(shared),
        },
    )
}

impl Outbox {
    /// Queues one message. A full queue (in items or bytes) closes the socket
    /// with 4008; the room never waits for a socket.
    pub fn send(&self, msg: Msg) -> bool {
        self.queue(Out::Message(msg))
    }

    /// Queues a ready control frame (a pong).
    pub fn send_control(&self, frame: Bytes) -> bool {
        self.queue(Out::Control(frame))
    }

    pub fn send_text(&self, text: String) -> bool {
        self.send(shared(text))
    }

    fn queue(&self, out: Out) -> bool {
        let len = out.len();
        let queued = self.shared.bytes.fetch_add(len, Ordering::AcqRel) + len;
        if queued > self.shared.max_bytes {
            self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
            self.overflow();
            return false;
        }
        if self.shared.held.load(Ordering::Acquire) {
            let mut gate = self.shared.gate.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(waiting) = gate.as_mut() {
                waiting.push(out);
                return true;
            }
        }
        self.push(Queued { out, budget: None }, len)
    }

    /// Holds everything sent from now on until [`Outbox::open_with`] sends the
    /// welcome: a welcome waiting to be durable must still come first.
    pub fn hold(&self) {
        let mut gate = self.shared.gate.lock().unwrap_or_else(|p| p.into_inner());
        gate.get_or_insert_with(Vec::new);
        self.shared.held.store(true, Ordering::Release);
    }

    /// Sends `first` (a welcome, possibly large), then everything held behind it.
    pub fn open_with(&self, first: Msg, budget: &Arc<Budget>) -> bool {
        let mut gate = self.shared.gate.lock().unwrap_or_else(|p| p.into_inner());
        let mut ok = self.push_welcome(first, budget);
        for out in gate.take().unwrap_or_default() {
            // Already counted in `bytes` when it was held.
            let len = out.len();
            ok &= self.push(Queued { out, budget: None }, len);
        }
        self.shared.held.store(false, Ordering::Release);
        ok
    }

    /// Queues a welcome, which may be bigger than the queue's byte cap (a large
    /// document): such a one draws on the node-wide budget instead, and when that
    /// is spent the socket is closed with 1013 (try again later). It never waits
    /// at the gate: it is what the gate waits for.
    fn push_welcome(&self, msg: Msg, budget: &Arc<Budget>) -> bool {
        let len = msg.payload_len();
        if len <= self.shared.max_bytes / 2 {
            let queued = self.shared.bytes.fetch_add(len, Ordering::AcqRel) + len;
            if queued > self.shared.max_bytes {
                self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
                self.overflow();
                return false;
            }
            return self.push(
                Queued {
                    out: Out::Message(msg),
                    budget: None,
                },
                len,
            );
        }
        if !budget.take(len) {
            self.close(
                CloseCode::TryAgainLater,
                "the node is busy sending large documents; try again later",
            );
            return false;
        }
        let queued = Queued {
            out: Out::Message(msg),
            budget: Some(budget.clone()),
        };
        self.push(queued, len)
    }

    /// Hands an accounted item to the channel, undoing the account if it fails.
    fn push(&self, queued: Queued, len: usize) -> bool {
        match self.frames.try_send(queued) {
            Ok(()) => true,
            Err(e) => {
                let full = matches!(e, mpsc::error::TrySendError::Full(_));
                let queued = e.into_inner();
                match &queued.budget {
                    Some(budget) => budget.give(len),
                    None => {
                        self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
                    }
                }
                if full {
                    self.overflow();
                }
                false
            }
        }
    }

    fn overflow(&self) {
        if !self.is_closing() {
            self.shared.metrics.queue_overflows.inc();
        }
        self.close(CloseCode::TooSlow, "too slow: the send queue overflowed");
    }

    /// Asks the writer to close the socket with `code` after what is queued
    /// (except after an overflow). The first request wins.
    pub fn close(&self, code: CloseCode, reason: &str) {
        if self.request_close(code.code(), reason) {
            self.shared
                .metrics
                .closes
                .with_label_values(&[&code.to_string()])
                .inc();
        }
    }

    /// Answers a close the client started (not counted as a close by the node).
    pub fn echo_close(&self, code: u16) {
        self.request_close(code, "");
    }

    fn request_close(&self, code: u16, reason: &str) -> bool {
        let mut slot = self.shared.close.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return false;
        }
        *slot = Some(CloseRequest {
            code,
            reason: reason.to_owned(),
        });
        drop(slot);
        self.shared.notify.notify_one();
        true
    }

    pub fn is_closing(&self) -> bool {
        CloseWatch(self.shared.clone()).requested().is_some()
    }
}

impl OutboxReceiver {
    /// Takes up to `max` queued items (waiting for the first); 0 once every
    /// sender is gone. Their bytes leave the queue's account here.
    pub async fn recv_many(&mut self, out: &mut Vec<Out>, max: usize) -> usize {
        let mut queued = Vec::with_capacity(max);
        let n = self.frames.recv_many(&mut queued, max).await;
        out.extend(queued.into_iter().map(|q| self.release(q)));
        n
    }

    /// Takes whatever is queued right now, without waiting.
    pub fn drain_now(&mut self) -> Vec<Out> {
        let mut out = Vec::new();
        while let Ok(q) = self.frames.try_recv() {
            out.push(self.release(q));
        }
        out
    }

    fn release(&self, q: Queued) -> Out {
        let len = q.out.len();
        match &q.budget {
            Some(budget) => budget.give(len),
            None => {
                self.close.0.bytes.fetch_sub(len, Ordering::AcqRel);
            }
        }
        q.out
    }
}

impl CloseWatch {
    /// Waits until a close is requested, and returns it.
    pub async fn closed(&self) -> CloseRequest {
        loop {
            let notified = self.0.notify.notified();
            if let Some(req) = self.requested() {
                return req;
            }
            notified.await;
        }
    }

    pub fn requested(&self) -> Option<CloseRequest> {
        self.0
            .close
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests;
