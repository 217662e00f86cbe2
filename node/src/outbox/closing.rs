//! Closing a socket: the writer is asked to close it after what is queued; the
//! first request wins.

use std::sync::atomic::Ordering;

use atrium_protocol::CloseCode;

use super::{CloseRequest, Outbox, Shared};

impl Outbox {
    /// A full queue: the socket is closed with 4008 (counted once).
    pub(super) fn overflow(&self) {
        if !self.is_closing() {
            self.shared.metrics.queue_overflows.inc();
        }
        self.close(CloseCode::TooSlow, "too slow: the send queue overflowed");
    }

    /// Asks the writer to close the socket with `code` after what is queued
    /// (except after an overflow). The first request wins.
    pub fn close(&self, code: CloseCode, reason: &str) {
        self.shared.close(code, reason);
    }

    /// Answers a close the client started (not counted as a close by the node).
    pub fn echo_close(&self, code: u16) {
        self.request_close(code, "");
    }

    fn request_close(&self, code: u16, reason: &str) -> bool {
        self.shared.request_close(code, reason)
    }

    pub fn is_closing(&self) -> bool {
        self.shared.closing.load(Ordering::Acquire)
    }
}

impl Shared {
    /// See [`Outbox::close`].
    pub(super) fn close(&self, code: CloseCode, reason: &str) {
        if self.request_close(code.code(), reason) {
            self.metrics
                .closes
                .with_label_values(&[&code.to_string()])
                .inc();
        }
    }

    fn request_close(&self, code: u16, reason: &str) -> bool {
        let mut slot = self.close.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return false;
        }
        *slot = Some(CloseRequest {
            code,
            reason: reason.to_owned(),
        });
        self.closing.store(true, Ordering::Release);
        drop(slot);
        self.notify.notify_one();
        true
    }
}
