//! Client connections the router holds: at most `ATRIUM_ROUTER_MAX_CONNECTIONS` at once, and
//! at most `ATRIUM_ROUTER_CONNECTIONS_PER_IP` from one client address, so that one address
//! cannot take every descriptor the router has (idle connections last a minute before
//! pingora closes them; reopening them keeps them held).
//!
//! [`Capped`] wraps the proxy's app: a connection takes its places before its first request
//! is read and keeps them through every request it carries, an upgraded socket's tunnel
//! included; one over a cap gets a short answer (429 `rate-limited` or 503 `unavailable`,
//! `Retry-After: 2`) and is closed. Its request heads are held to their limits (`heads`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pingora::apps::ServerApp;
use pingora::protocols::Stream;
use pingora::server::ShutdownWatch;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::heads::{HeadGuard, Heads};
use crate::metrics::Metrics;

/// Refusals being written at once; past this a refused connection is closed without one.
const REFUSALS_IN_FLIGHT: usize = 64;

/// How long a refusal may take to write, and to read what the client sent meanwhile.
const REFUSAL_TIME: Duration = Duration::from_secs(1);

/// Why a connection is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The router holds `ATRIUM_ROUTER_MAX_CONNECTIONS`.
    RouterFull,
    /// The address holds `ATRIUM_ROUTER_CONNECTIONS_PER_IP`.
    AddressFull,
}

impl Refusal {
    /// The `atrium_router_refused_total` label.
    pub fn reason(self) -> &'static str {
        match self {
            Self::RouterFull => "connections",
            Self::AddressFull => "address-connections",
        }
    }

    fn answer(self) -> String {
        let (status, body) = match self {
            Self::RouterFull => (
                "503 Service Unavailable",
                r#"{"error":{"code":"unavailable","message":"the router has as many connections as it may take; try again shortly"}}"#,
            ),
            Self::AddressFull => (
                "429 Too Many Requests",
                r#"{"error":{"code":"rate-limited","message":"this address has as many connections open as it may; close one or try again shortly"}}"#,
            ),
        };
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nretry-after: 2\r\n\
             connection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    }
}

/// Open connections, in all and per address.
pub struct Caps {
    max: usize,
    per_address: Option<usize>,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    all: usize,
    by_address: HashMap<IpAddr, usize>,
}

impl Caps {
    pub fn new(max: usize, per_address: Option<usize>) -> Arc<Self> {
        Arc::new(Self {
            max,
            per_address,
            open: Mutex::new(Open::default()),
        })
    }

    /// Places for a connection from `peer` (no address: a Unix socket, counted in all only).
    pub fn take(self: &Arc<Self>, peer: Option<IpAddr>) -> Result<Place, Refusal> {
        let key = peer.map(atrium_protocol::address_key);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.all >= self.max {
            return Err(Refusal::RouterFull);
        }
        let counted = match (key, self.per_address) {
            (Some(key), Some(cap)) => {
                let n = open.by_address.entry(key).or_insert(0);
                if *n >= cap {
                    return Err(Refusal::AddressFull);
                }
                *n += 1;
                Some(key)
            }
            _ => None,
        };
        open.all += 1;
        Ok(Place {
            caps: self.clone(),
            address: counted,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).all
    }
}

/// A connection's places, given back when it drops.
pub struct Place {
    caps: Arc<Caps>,
    address: Option<IpAddr>,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.caps.open.lock().unwrap_or_else(|p| p.into_inner());
        open.all -= 1;
        if let Some(key) = self.address {
            if let Some(n) = open.by_address.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    open.by_address.remove(&key);
                }
            }
        }
    }
}

/// The proxy's app, behind the caps.
pub struct Capped<A> {
    inner: Arc<A>,
    caps: Arc<Caps>,
    heads: Arc<Heads>,
    metrics: Arc<Metrics>,
    refusing: Arc<tokio::sync::Semaphore>,
}

impl<A> Capped<A> {
    pub fn new(inner: A, caps: Arc<Caps>, metrics: Arc<Metrics>) -> Self {
        Self {
            inner: Arc::new(inner),
            caps,
            heads: Heads::new(),
            metrics,
            refusing: Arc::new(tokio::sync::Semaphore::new(REFUSALS_IN_FLIGHT)),
        }
    }
}

#[async_trait]
impl<A: ServerApp + Send + Sync + 'static> ServerApp for Capped<A> {
    async fn process_new(
        self: &Arc<Self>,
        stream: Stream,
        shutdown: &ShutdownWatch,
    ) -> Option<Stream> {
        let peer = stream
            .get_socket_digest()
            .and_then(|d| d.peer_addr().and_then(|a| a.as_inet()).map(|a| a.ip()));
        let _place = match self.caps.take(peer) {
            Ok(place) => place,
            Err(why) => {
                self.metrics
                    .refused
                    .with_label_values(&[why.reason()])
                    .inc();
                if let Ok(permit) = self.refusing.clone().try_acquire_owned() {
                    refuse(stream, why).await;
                    drop(permit);
                }
                return None;
            }
        };
        // Its heads held to their limits, each request's from its first byte.
        let (guarded, heads) = HeadGuard::new(stream, self.heads.clone());
        // Every request of this connection runs here, so its places last as long as it does.
        let mut next = self.inner.process_new(Box::new(guarded), shutdown).await;
        while let Some(stream) = next {
            heads.next_request();
            next = self.inner.process_new(stream, shutdown).await;
        }
        None
    }

    async fn cleanup(&self) {
        self.inner.cleanup().await
    }
}

/// Writes the refusal, then reads what the client sent for a moment, so closing does not
/// reset the connection before the client has read the answer.
async fn refuse(mut stream: Stream, why: Refusal) {
    let written = tokio::time::timeout(REFUSAL_TIME, stream.write_all(why.answer().as_bytes()))
        .await
        .is_ok_and(|w| w.is_ok());
    if !written {
        return;
    }
    let _ = tokio::time::timeout(REFUSAL_TIME, stream.shutdown()).await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(REFUSAL_TIME, async {
        let mut left = 64 * 1024;
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left -= n.min(left),
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_capped_in_all_and_per_address() {
        let caps = Caps::new(3, Some(2));
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "2001:db8::1".parse().unwrap();
        let b_too: IpAddr = "2001:db8::2".parse().unwrap();
        let first = caps.take(Some(a)).unwrap();
        let _second = caps.take(Some(a)).unwrap();
        assert_eq!(caps.take(Some(a)).err(), Some(Refusal::AddressFull));
        let _third = caps.take(Some(b)).unwrap();
        assert_eq!(
            caps.take(Some(b_too)).err(),
            Some(Refusal::RouterFull),
            "all three places are taken"
        );
        drop(first);
        assert_eq!(caps.open(), 2);
        let _back = caps
            .take(Some(a))
            .expect("a place given back is taken again");
        let open = caps.open.lock().unwrap();
        assert_eq!(open.by_address.len(), 2, "one entry per address in use");
    }

    #[test]
    fn an_ipv6_client_counts_by_its_64() {
        let caps = Caps::new(100, Some(1));
        let _one = caps.take(Some("2001:db8:0:1::1".parse().unwrap())).unwrap();
        assert_eq!(
            caps.take(Some("2001:db8:0:1::ffff".parse().unwrap())).err(),
            Some(Refusal::AddressFull)
        );
        assert!(caps.take(Some("2001:db8:0:2::1".parse().unwrap())).is_ok());
    }

    #[test]
    fn without_a_cap_per_address_only_the_total_counts() {
        let caps = Caps::new(2, None);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let _x = caps.take(Some(a)).unwrap();
        let _y = caps.take(Some(a)).unwrap();
        assert_eq!(caps.take(None).err(), Some(Refusal::RouterFull));
    }
}
