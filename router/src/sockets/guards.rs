//! What a request or a socket holds while it lives: dropping it is what counts it out.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use atrium_coordinator::NodeId;
use atrium_protocol::CloseCode;

use super::{close_frame, Tracker};

/// One HTTP request in flight.
pub struct RequestGuard(pub(super) Arc<Tracker>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.requests.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One proxied socket; deregistered on drop.
pub struct SocketGuard {
    tracker: Arc<Tracker>,
    id: u64,
    node: NodeId,
    closing: Arc<AtomicBool>,
    sent_close: bool,
}

impl SocketGuard {
    pub(super) fn new(
        tracker: Arc<Tracker>,
        id: u64,
        node: NodeId,
        closing: Arc<AtomicBool>,
    ) -> Self {
        Self {
            tracker,
            id,
            node,
            closing,
            sent_close: false,
        }
    }

    /// At the end of the node's side of the socket: the close frame to send the client when
    /// the router itself ended the socket (a drain), once.
    pub fn close_frame_at_end(&mut self) -> Option<Bytes> {
        if self.sent_close || !self.closing.load(Ordering::Acquire) {
            return None;
        }
        self.sent_close = true;
        Some(close_frame(CloseCode::ServiceRestart, "router restarting"))
    }
}

impl Drop for SocketGuard {
    fn drop(&mut self) {
        self.tracker.lock().remove(&self.id);
        self.tracker
            .metrics
            .sockets_open
            .with_label_values(&[self.node.as_str()])
            .dec();
    }
}
