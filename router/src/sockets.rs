//! Proxied WebSockets and in-flight HTTP requests, counted so a shutdown knows when it is done,
//! and closed with 1012 when the drain period is over.
//!
//! pingora copies an upgraded connection's bytes itself and offers no way to write to the
//! client from outside that loop. So a drain shuts the upstream half of each proxied socket
//! down: pingora then sees the node's side end, and the router's response body filter appends
//! a close frame (1012, "service restart") before the client's side is closed. The upstream
//! file descriptor is checked against the addresses it had when registered before it is shut,
//! so a descriptor number reused by another connection is never touched.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{BufMut, Bytes, BytesMut};
use nix::sys::socket::{getpeername, getsockname, shutdown, Shutdown, SockaddrStorage};

use atrium_coordinator::NodeId;
use atrium_protocol::CloseCode;

use crate::metrics::Metrics;

/// A server-to-client WebSocket close frame (FIN + opcode 8, unmasked) with `code` and a short
/// UTF-8 `reason` (at most 123 bytes, as control frames carry at most 125).
pub fn close_frame(code: CloseCode, reason: &str) -> Bytes {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let reason = &reason.as_bytes()[..end];
    let mut frame = BytesMut::with_capacity(4 + reason.len());
    frame.put_u8(0x88);
    frame.put_u8((2 + reason.len()) as u8);
    frame.put_u16(code.code());
    frame.put_slice(reason);
    frame.freeze()
}

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
        SocketGuard {
            tracker: self.clone(),
            id,
            node: node.clone(),
            closing,
            sent_close: false,
        }
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
            let same = getsockname::<SockaddrStorage>(entry.fd)
                .ok()
                .and_then(|a| to_std(&a))
                == Some(entry.local)
                && getpeername::<SockaddrStorage>(entry.fd)
                    .ok()
                    .and_then(|a| to_std(&a))
                    == Some(entry.peer);
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

/// A socket address from `nix`'s form.
pub(crate) fn to_std(addr: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = addr.as_sockaddr_in() {
        return Some(SocketAddr::from((v4.ip(), v4.port())));
    }
    addr.as_sockaddr_in6()
        .map(|v6| SocketAddr::from((v6.ip(), v6.port())))
}

/// One HTTP request in flight.
pub struct RequestGuard(Arc<Tracker>);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_frames_are_unmasked_with_the_code_first() {
        let f = close_frame(CloseCode::ServiceRestart, "bye");
        assert_eq!(&f[..], &[0x88, 5, 0x03, 0xF4, b'b', b'y', b'e']);
        let long = close_frame(CloseCode::ServiceRestart, &"é".repeat(100));
        assert!(long.len() <= 127);
        assert_eq!(long[1] as usize, long.len() - 2);
        assert!(std::str::from_utf8(&long[4..]).is_ok());
    }

    #[test]
    fn requests_are_counted_while_their_guard_lives() {
        let t = Tracker::new(Arc::new(Metrics::new()));
        let a = t.request();
        let b = t.request();
        assert_eq!(t.requests(), 2);
        drop(a);
        drop(b);
        assert_eq!(t.requests(), 0);
    }

    #[test]
    fn a_socket_gets_one_close_frame_only_when_the_router_ends_it() {
        let t = Tracker::new(Arc::new(Metrics::new()));
        let local: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let node = NodeId::parse("n0").unwrap();
        // -1 is never a live descriptor: close_all marks it but shuts nothing down.
        let mut guard = t.socket(&node, -1, local, local);
        assert_eq!(guard.close_frame_at_end(), None);
        assert_eq!(t.close_all(), 0);
        assert!(guard.close_frame_at_end().is_some());
        assert_eq!(guard.close_frame_at_end(), None);
        assert_eq!(t.sockets(), 1);
        drop(guard);
        assert_eq!(t.sockets(), 0);
    }
}
