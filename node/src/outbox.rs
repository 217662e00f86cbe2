//! A socket's send queue, as rooms see it.
//!
//! Rooms never write to a socket themselves: they push shared, already-encoded
//! frames (`Bytes`, encoded once per room message) into each person's bounded
//! queue, and the socket's writer drains it. A queue that overflows closes its
//! socket with 4008 instead of slowing the room (invariant 4).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::{mpsc, Notify};

use crate::metrics::metrics;

/// Identifies one socket for the whole life of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

impl ConnId {
    pub fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ConnId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// Close code: the send queue overflowed.
pub const CLOSE_TOO_SLOW: u16 = 4008;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseRequest {
    pub code: u16,
    pub reason: String,
}

/// What the queue and its writer share.
struct Shared {
    close: Mutex<Option<CloseRequest>>,
    notify: Notify,
    /// Bytes queued and not yet taken by the writer.
    bytes: AtomicUsize,
    max_bytes: usize,
}

/// A node-wide allowance for frames bigger than a send queue may hold (large
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

/// One queued frame; a frame drawn on the [`Budget`] gives its bytes back there.
pub struct Queued {
    pub frame: Bytes,
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

/// A queue of at most `frames` frames and `bytes` bytes.
pub fn outbox(frames: usize, bytes: usize) -> (Outbox, OutboxReceiver) {
    let (tx, rx) = mpsc::channel(frames.max(1));
    let shared = Arc::new(Shared {
        close: Mutex::new(None),
        notify: Notify::new(),
        bytes: AtomicUsize::new(0),
        max_bytes: bytes.max(1),
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
    /// Queues one text frame. A full queue (in frames or bytes) closes the socket
    /// with 4008; the room never waits for a socket.
    pub fn send(&self, frame: Bytes) -> bool {
        let len = frame.len();
        let queued = self.shared.bytes.fetch_add(len, Ordering::AcqRel) + len;
        if queued > self.shared.max_bytes {
            self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
            self.overflow();
            return false;
        }
        match self.frames.try_send(Queued {
            frame,
            budget: None,
        }) {
            Ok(()) => true,
            Err(e) => {
                self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
                if matches!(e, mpsc::error::TrySendError::Full(_)) {
                    self.overflow();
                }
                false
            }
        }
    }

    /// Queues a frame that may be bigger than the queue's byte cap (a welcome with
    /// a large document): such a frame draws on the node-wide budget instead, and
    /// when that is spent the socket is closed with 1013 (try again later).
    pub fn send_large(&self, frame: Bytes, budget: &Arc<Budget>) -> bool {
        let len = frame.len();
        if len <= self.shared.max_bytes / 2 {
            return self.send(frame);
        }
        if !budget.take(len) {
            self.close(
                1013,
                "the node is busy sending large documents; try again later",
            );
            return false;
        }
        let queued = Queued {
            frame,
            budget: Some(budget.clone()),
        };
        match self.frames.try_send(queued) {
            Ok(()) => true,
            Err(e) => {
                budget.give(len);
                if matches!(e, mpsc::error::TrySendError::Full(_)) {
                    self.overflow();
                }
                false
            }
        }
    }

    pub fn send_text(&self, text: String) -> bool {
        self.send(Bytes::from(text))
    }

    fn overflow(&self) {
        if !self.is_closing() {
            metrics().queue_overflows.inc();
        }
        self.close(CLOSE_TOO_SLOW, "too slow: the send queue overflowed");
    }

    /// Asks the writer to close the socket with `code` after what is queued
    /// (except after an overflow). The first request wins.
    pub fn close(&self, code: u16, reason: &str) {
        let mut slot = self.shared.close.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(CloseRequest {
                code,
                reason: reason.to_owned(),
            });
            metrics()
                .closes
                .with_label_values(&[&code.to_string()])
                .inc();
            drop(slot);
            self.shared.notify.notify_one();
        }
    }

    pub fn is_closing(&self) -> bool {
        CloseWatch(self.shared.clone()).requested().is_some()
    }
}

impl OutboxReceiver {
    /// Takes up to `max` queued frames (waiting for the first); 0 once every
    /// sender is gone. Their bytes leave the queue's account here.
    pub async fn recv_many(&mut self, out: &mut Vec<Bytes>, max: usize) -> usize {
        let mut queued = Vec::with_capacity(max);
        let n = self.frames.recv_many(&mut queued, max).await;
        for q in queued {
            self.release(&q);
            out.push(q.frame);
        }
        n
    }

    /// Takes whatever is queued right now, without waiting.
    pub fn drain_now(&mut self) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Ok(q) = self.frames.try_recv() {
            self.release(&q);
            out.push(q.frame);
        }
        out
    }

    fn release(&self, q: &Queued) {
        match &q.budget {
            Some(budget) => budget.give(q.frame.len()),
            None => {
                self.close
                    .0
                    .bytes
                    .fetch_sub(q.frame.len(), Ordering::AcqRel);
            }
        }
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
mod tests {
    use super::*;

    #[tokio::test]
    async fn overflow_closes_with_4008_and_first_close_wins() {
        let (out, rx) = outbox(2, 1 << 20);
        assert!(out.send(Bytes::from_static(b"a")));
        assert!(out.send(Bytes::from_static(b"b")));
        assert!(!out.send(Bytes::from_static(b"c")));
        out.close(1012, "later request loses");
        assert_eq!(rx.close.closed().await.code, CLOSE_TOO_SLOW);
    }

    #[tokio::test]
    async fn bytes_are_bounded_and_given_back() {
        let (out, mut rx) = outbox(100, 10);
        assert!(out.send(Bytes::from_static(b"12345678")));
        let mut got = Vec::new();
        assert_eq!(rx.recv_many(&mut got, 10).await, 1);
        assert!(out.send(Bytes::from_static(b"12345678")));
        assert!(!out.send(Bytes::from_static(b"123")));
        assert_eq!(rx.close.requested().unwrap().code, CLOSE_TOO_SLOW);
    }

    #[tokio::test]
    async fn large_frames_draw_on_the_budget() {
        let budget = Budget::new(100);
        let (out, mut rx) = outbox(10, 10);
        assert!(out.send_large(Bytes::from(vec![b'x'; 80]), &budget));
        assert!(!budget.take(30));
        rx.drain_now();
        assert!(budget.take(100));
        budget.give(100);
        let (out2, rx2) = outbox(10, 10);
        assert!(!out2.send_large(Bytes::from(vec![b'x'; 200]), &budget));
        assert_eq!(rx2.close.requested().unwrap().code, 1013);
    }
}
