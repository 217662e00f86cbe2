//! Proxied WebSockets and in-flight HTTP requests, counted so a shutdown knows when it is done,
//! and closed with 1012 when the drain period is over.
//!
//! Once a node has switched protocols, the router's tunnel (`crate::tunnel`) carries the
//! socket's bytes. A drain marks every socket closing and wakes its tunnel, which ends the
//! node's side and sends the client a close frame (1012, "service restart") at the next frame
//! boundary of what the node sent (`boundary`).

mod boundary;
mod frame;
mod guards;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use atrium_coordinator::NodeId;

use crate::metrics::Metrics;

pub use boundary::Frames;
pub use frame::close_frame;
pub use guards::{RequestGuard, SocketGuard};

/// A proxied socket's "the router is closing you" signal.
#[derive(Debug, Default)]
pub struct Closing {
    set: AtomicBool,
    notify: Notify,
}

impl Closing {
    /// Whether the router closes this socket.
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Completes once the router closes this socket (at once if it already did).
    pub async fn wait(&self) {
        // A notification sent before this wait is kept as a permit, so none is missed.
        while !self.is_set() {
            self.notify.notified().await;
        }
    }

    fn set(&self) {
        self.set.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

/// Every proxied socket and HTTP request of this router.
pub struct Tracker {
    metrics: Arc<Metrics>,
    next: AtomicU64,
    sockets: Mutex<HashMap<u64, Arc<Closing>>>,
    requests: AtomicUsize,
}

impl Tracker {
    pub fn new(metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Self {
            metrics,
            next: AtomicU64::new(1),
            sockets: Mutex::new(HashMap::new()),
            requests: AtomicUsize::new(0),
        })
    }

    /// Counts one HTTP request until the guard drops.
    pub fn request(self: &Arc<Self>) -> RequestGuard {
        self.requests.fetch_add(1, Ordering::AcqRel);
        RequestGuard(self.clone())
    }

    /// Registers an upgraded socket to `node`; it stays registered until the guard drops.
    pub fn socket(self: &Arc<Self>, node: &NodeId) -> SocketGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let closing = Arc::new(Closing::default());
        self.lock().insert(id, closing.clone());
        self.metrics
            .sockets_opened
            .with_label_values(&[node.as_str()])
            .inc();
        self.metrics
            .sockets_open
            .with_label_values(&[node.as_str()])
            .inc();
        SocketGuard::new(self.clone(), id, node.clone(), closing)
    }

    /// HTTP requests in flight (upgraded sockets not included).
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Acquire)
    }

    /// Proxied sockets open.
    pub fn sockets(&self) -> usize {
        self.lock().len()
    }

    /// Closes every proxied socket: each one's tunnel ends the node's side and sends the
    /// client a 1012 close frame. Returns how many were told.
    pub fn close_all(&self) -> usize {
        let sockets = self.lock();
        for closing in sockets.values() {
            closing.set();
        }
        sockets.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Closing>>> {
        self.sockets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
