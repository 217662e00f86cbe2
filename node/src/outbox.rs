//! A socket's send queue, as rooms see it.
//!
//! Rooms never write to a socket themselves: they push shared, already-encoded
//! frames (`Bytes`, encoded once per room message) into each person's bounded
//! queue, and the socket's writer drains it. A queue that overflows closes its
//! socket with 4008 instead of slowing the room (invariant 4).

use std::sync::atomic::{AtomicU64, Ordering};
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

#[derive(Default)]
struct CloseSlot {
    request: Mutex<Option<CloseRequest>>,
    notify: Notify,
}

/// The sending side, cloned into rooms and indexes.
#[derive(Clone)]
pub struct Outbox {
    pub id: ConnId,
    frames: mpsc::Sender<Bytes>,
    close: Arc<CloseSlot>,
}

/// The socket writer's side.
pub struct OutboxReceiver {
    pub frames: mpsc::Receiver<Bytes>,
    pub close: CloseWatch,
}

/// Where the writer learns that a close was asked for.
#[derive(Clone)]
pub struct CloseWatch(Arc<CloseSlot>);

pub fn outbox(capacity: usize) -> (Outbox, OutboxReceiver) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let close = Arc::new(CloseSlot::default());
    (
        Outbox {
            id: ConnId::next(),
            frames: tx,
            close: close.clone(),
        },
        OutboxReceiver {
            frames: rx,
            close: CloseWatch(close),
        },
    )
}

impl Outbox {
    /// Queues one text frame. A full queue closes the socket with 4008.
    pub fn send(&self, frame: Bytes) -> bool {
        match self.frames.try_send(frame) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.close(CLOSE_TOO_SLOW, "too slow: the send queue overflowed");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    pub fn send_text(&self, text: String) -> bool {
        self.send(Bytes::from(text))
    }

    /// Asks the writer to close the socket with `code` after what is queued
    /// (except after an overflow). The first request wins.
    pub fn close(&self, code: u16, reason: &str) {
        let mut slot = self.close.request.lock().unwrap_or_else(|p| p.into_inner());
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
            self.close.notify.notify_one();
        }
    }

    pub fn is_closing(&self) -> bool {
        self.close
            .request
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
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
            .request
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
        let (out, rx) = outbox(2);
        assert!(out.send(Bytes::from_static(b"a")));
        assert!(out.send(Bytes::from_static(b"b")));
        assert!(!out.send(Bytes::from_static(b"c")));
        out.close(1012, "later request loses");
        assert_eq!(rx.close.closed().await.code, CLOSE_TOO_SLOW);
    }
}
