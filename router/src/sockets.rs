//! Proxied WebSockets and in-flight HTTP requests, counted so a shutdown knows when it is done,
//! and closed with 1012 when the drain period is over.
//!
//! pingora copies an upgraded connection's bytes itself and offers no way to write to the
//! client from outside that loop. So a drain shuts the upstream half of each proxied socket
//! down: pingora then sees the node's side end, and the router's response body filter appends
//! a close frame (1012, "service restart") before the client's side is closed. The upstream
//! file descriptor is checked against the addresses it had when registered before it is shut,
//! so a descriptor number reused by another connection is never touched.

mod frame;
mod guards;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use nix::sys::socket::{getpeername, getsockname, shutdown, Shutdown, SockaddrStorage};

use atrium_coordinator::NodeId;

use crate::metrics::Metrics;

pub use frame::close_frame;
pub use guards::{RequestGuard, SocketGuard};

struct Entry {
    fd: RawFd,
    local: SocketAddr,
    peer: SocketAddr,
    closing: Arc<AtomicBool>,
}

/// Every proxied socket and HTTP request of this router.
pub struct Tracker {
    metrics: Arc<Metrics>,
    next: AtomicU64,
    sockets: Mutex<HashMap<u64, Entry>>,
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

    /// Registers an upgraded socket whose upstream connection is `fd` (from `local` to
    /// `peer`); it stays registered until the guard drops.
    pub fn socket(
        self: &Arc<Self>,
        node: &NodeId,
        fd: RawFd,
        local: SocketAddr,
        peer: SocketAddr,
    ) -> SocketGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let closing = Arc::new(AtomicBool::new(false));
        self.lock().insert(
            id,
            Entry {
                fd,
                local,
                peer,
                closing: closing.clone(),
            },
        );
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

    /// Closes every proxied socket: marks it so its client gets a 1012 close frame, then ends
    /// its upstream half. Returns how many were closed.
    pub fn close_all(&self) -> usize {
        let sockets = self.lock();
        let mut closed = 0;
        for entry in sockets.values() {
            entry.closing.store(true, Ordering::Release);
            // Only the descriptor still connected as registered is ours.
            let same = addresses(entry.fd) == Some((entry.local, entry.peer));
            if same && shutdown(entry.fd, Shutdown::Both).is_ok() {
                closed += 1;
            }
        }
        closed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.sockets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The (local, peer) addresses of a connected descriptor.
pub(crate) fn addresses(fd: RawFd) -> Option<(SocketAddr, SocketAddr)> {
    let local = getsockname::<SockaddrStorage>(fd).ok()?;
    let peer = getpeername::<SockaddrStorage>(fd).ok()?;
    to_std(&local).zip(to_std(&peer))
}

/// A socket address from `nix`'s form.
fn to_std(addr: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = addr.as_sockaddr_in() {
        return Some(SocketAddr::from((v4.ip(), v4.port())));
    }
    addr.as_sockaddr_in6()
        .map(|v6| SocketAddr::from((v6.ip(), v6.port())))
}
