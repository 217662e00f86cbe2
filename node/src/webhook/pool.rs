//! Idle connections to webhook endpoints, kept for the next message to the same host. A
//! connection per message (and for https a TLS handshake per message) cost the node and
//! the receiver more than the message did.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;

/// How long a connection may sit idle before it is closed. Receivers close theirs after
/// anything from 5 s to a few minutes; one that closed first is seen closed when taken,
/// or fails its request, which then goes on a new connection.
pub(super) const IDLE_FOR: Duration = Duration::from_secs(30);

/// Where a connection goes: scheme, host and port.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Origin {
    pub https: bool,
    pub host: String,
    pub port: u16,
}

/// A connection's request half, and the task that drives it (ended when dropped, so a
/// connection given up on, idle too long, or whose request timed out closes at once).
pub(super) struct Connection {
    pub sender: SendRequest<Full<Bytes>>,
    driver: tokio::task::JoinHandle<()>,
}

impl Connection {
    pub(super) fn new(
        sender: SendRequest<Full<Bytes>>,
        driver: tokio::task::JoinHandle<()>,
    ) -> Self {
        Self { sender, driver }
    }

    fn usable(&self, since: Instant, now: Instant) -> bool {
        now.saturating_duration_since(since) < IDLE_FOR && !self.sender.is_closed()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Idle connections by origin: at most `per_origin` to one, `most` in all.
pub(super) struct Pool {
    idle: Mutex<HashMap<Origin, Vec<(Connection, Instant)>>>,
    per_origin: usize,
    most: usize,
}

impl Pool {
    pub(super) fn new(per_origin: usize, most: usize) -> Self {
        Self {
            idle: Mutex::default(),
            per_origin,
            most,
        }
    }

    /// The connection to `origin` used last, if one is idle and still open.
    pub(super) fn take(&self, origin: &Origin) -> Option<Connection> {
        let mut idle = self.lock();
        let kept = idle.get_mut(origin)?;
        let now = Instant::now();
        let mut found = None;
        while let Some((conn, since)) = kept.pop() {
            if conn.usable(since, now) {
                found = Some(conn);
                break;
            }
        }
        if kept.is_empty() {
            idle.remove(origin);
        }
        found
    }

    /// Keeps `conn` for the next message to `origin`, unless as many are kept already.
    pub(super) fn give_back(&self, origin: Origin, conn: Connection) {
        let mut idle = self.lock();
        Self::forget_expired(&mut idle);
        let total: usize = idle.values().map(Vec::len).sum();
        let kept = idle.entry(origin).or_default();
        if kept.len() < self.per_origin && total < self.most && !conn.sender.is_closed() {
            kept.push((conn, Instant::now()));
        }
    }

    /// Closes the connections idle for [`IDLE_FOR`] (or closed by their receiver).
    pub(super) fn expire(&self) {
        Self::forget_expired(&mut self.lock());
    }

    /// Connections kept, in all.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn forget_expired(idle: &mut HashMap<Origin, Vec<(Connection, Instant)>>) {
        let now = Instant::now();
        idle.retain(|_, kept| {
            kept.retain(|(conn, since)| conn.usable(*since, now));
            !kept.is_empty()
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Origin, Vec<(Connection, Instant)>>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::rt::TokioIo;

    /// A connection over an in-memory pipe; the other end is returned to keep it open.
    async fn connection() -> (Connection, tokio::io::DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(1024);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(ours))
            .await
            .unwrap();
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        (Connection::new(sender, driver), theirs)
    }

    fn origin(host: &str) -> Origin {
        Origin {
            https: true,
            host: host.into(),
            port: 443,
        }
    }

    #[tokio::test]
    async fn it_keeps_at_most_its_bounds_and_hands_back_what_it_kept() {
        let pool = Pool::new(2, 3);
        let mut ends = Vec::new();
        for host in ["a", "a", "a", "b", "c"] {
            let (conn, end) = connection().await;
            ends.push(end);
            pool.give_back(origin(host), conn);
        }
        // Two to "a" (the third refused), one to "b", none to "c" (three in all).
        assert_eq!(pool.len(), 3);
        assert!(pool.take(&origin("c")).is_none());
        assert!(pool.take(&origin("a")).is_some());
        assert!(pool.take(&origin("a")).is_some());
        assert!(pool.take(&origin("a")).is_none());
        assert!(pool.take(&origin("b")).is_some());
        assert_eq!(pool.len(), 0);
    }

    #[tokio::test]
    async fn a_connection_its_receiver_closed_is_not_handed_out() {
        let pool = Pool::new(4, 4);
        let (conn, end) = connection().await;
        pool.give_back(origin("a"), conn);
        drop(end);
        // The driver sees the pipe end and closes its side.
        let deadline = Instant::now() + Duration::from_secs(5);
        while pool.len() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
            pool.expire();
        }
        assert_eq!(pool.len(), 0, "a closed connection stayed kept");
        assert!(pool.take(&origin("a")).is_none());
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_after_its_time() {
        let pool = Pool::new(4, 4);
        let (conn, _end) = connection().await;
        pool.give_back(origin("a"), conn);
        pool.expire();
        assert_eq!(pool.len(), 1);
        // Kept `IDLE_FOR` ago.
        let mut idle = pool.lock();
        for kept in idle.values_mut() {
            for (_, since) in kept.iter_mut() {
                *since -= IDLE_FOR;
            }
        }
        drop(idle);
        pool.expire();
        assert_eq!(pool.len(), 0);
    }
}
