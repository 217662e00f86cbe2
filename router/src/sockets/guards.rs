//! What a request or a socket holds while it lives: dropping it is what counts it out.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use atrium_coordinator::NodeId;

use super::{Closing, Tracker};

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
    closing: Arc<Closing>,
}

impl SocketGuard {
    pub(super) fn new(tracker: Arc<Tracker>, id: u64, node: NodeId, closing: Arc<Closing>) -> Self {
        Self {
            tracker,
            id,
            node,
            closing,
        }
    }

    /// The signal that the router closes this socket (a drain).
    pub fn closing(&self) -> Arc<Closing> {
        self.closing.clone()
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
