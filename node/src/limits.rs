//! Limits that keep one client (or one address, or one email) from taking more
//! than its share: token buckets, keyed buckets with a bounded memory, and
//! per-address socket counts.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A token bucket: `rate` tokens a second, holding at most `burst`.
#[derive(Debug, Clone)]
pub struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// A full bucket.
    pub fn new(rate: f64, burst: f64, now: Instant) -> Self {
        Self {
            rate,
            burst,
            tokens: burst,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.last = now;
    }

    /// Takes a token if there is one.
    pub fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// How long until a token is there.
    pub fn wait(&self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        let tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if tokens >= 1.0 || self.rate <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((1.0 - tokens) / self.rate)
        }
    }

    fn is_full(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens + elapsed * self.rate >= self.burst
    }
}

/// Buckets by key (an address, an email), sharing one memory bound: when it is
/// reached, buckets that refilled completely are forgotten (they hold no state a
/// fresh bucket would not).
pub struct KeyedLimiter<K> {
    per_minute: u32,
    max_keys: usize,
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K: std::hash::Hash + Eq + Clone> KeyedLimiter<K> {
    pub fn per_minute(per_minute: u32, max_keys: usize) -> Self {
        Self {
            per_minute,
            max_keys,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `key` may go ahead now.
    pub fn allow(&self, key: &K) -> bool {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= self.max_keys && !buckets.contains_key(key) {
            buckets.retain(|_, b| !b.is_full(now));
            if buckets.len() >= self.max_keys {
                // Still full of active keys: refuse newcomers rather than grow.
                return false;
            }
        }
        let burst = f64::from(self.per_minute);
        buckets
            .entry(key.clone())
            .or_insert_with(|| Bucket::new(burst / 60.0, burst, now))
            .take(now)
    }
}

/// Open sockets per client address, capped.
pub struct AddressCounts {
    cap: usize,
    counts: Mutex<HashMap<IpAddr, usize>>,
}

impl AddressCounts {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a slot for `addr`; `None` when the address is at its cap. The slot
    /// is given back when the returned guard drops.
    pub fn take(self: &Arc<Self>, addr: IpAddr) -> Option<AddressSlot> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = counts.entry(addr).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            owner: self.clone(),
            addr,
        })
    }
}

pub struct AddressSlot {
    owner: Arc<AddressCounts>,
    addr: IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut counts = self.owner.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = counts.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.addr);
            }
        }
    }
}

/// An address or a range of them (`10.244.0.0/16`, `fd00::/8`, `127.0.0.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    base: IpAddr,
    prefix: u8,
}

impl Network {
    /// Parses `ip` or `ip/prefix`; `None` when it is neither.
    pub fn parse(s: &str) -> Option<Self> {
        let (ip, prefix) = match s.trim().split_once('/') {
            Some((ip, p)) => (ip.parse::<IpAddr>().ok()?, Some(p.parse::<u8>().ok()?)),
            None => (s.trim().parse::<IpAddr>().ok()?, None),
        };
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(Self { base: ip, prefix })
    }

    pub fn contains(&self, ip: &IpAddr) -> bool {
        let (a, b, bits) = match (self.base, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                (u128::from(u32::from(a)), u128::from(u32::from(*b)), 32)
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(*b), 128),
            _ => return false,
        };
        let shift = bits - u32::from(self.prefix);
        shift >= bits || (a >> shift) == (b >> shift)
    }
}

/// The client's address: the peer, or, when the peer is a trusted proxy, the
/// right-most `X-Forwarded-For` entry that is not itself a trusted proxy.
pub fn client_address(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[Network]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let Some(header) = forwarded_for else {
        return peer;
    };
    header
        .split(',')
        .rev()
        .filter_map(|s| s.trim().parse::<IpAddr>().ok())
        .find(|a| !is_trusted(a))
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_refills_at_its_rate() {
        let t0 = Instant::now();
        let mut b = Bucket::new(10.0, 2.0, t0);
        assert!(b.take(t0));
        assert!(b.take(t0));
        assert!(!b.take(t0));
        assert!(b.wait(t0) > Duration::from_millis(90));
        assert!(b.take(t0 + Duration::from_millis(101)));
    }

    #[test]
    fn keyed_limiter_stays_bounded() {
        let l = KeyedLimiter::per_minute(2, 3);
        assert!(l.allow(&"a"));
        assert!(l.allow(&"a"));
        assert!(!l.allow(&"a"));
        assert!(l.allow(&"b"));
        assert!(l.allow(&"c"));
        // Three active keys: a fourth is refused rather than remembered.
        assert!(!l.allow(&"d"));
    }

    #[test]
    fn address_slots_come_back() {
        let counts = Arc::new(AddressCounts::new(1));
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let slot = counts.take(ip).unwrap();
        assert!(counts.take(ip).is_none());
        drop(slot);
        assert!(counts.take(ip).is_some());
    }

    #[test]
    fn forwarded_for_only_from_trusted_peers() {
        let proxy: IpAddr = "127.0.0.1".parse().unwrap();
        let trusted = [Network::parse("127.0.0.1").unwrap()];
        let other: IpAddr = "192.0.2.9".parse().unwrap();
        let xff = Some("203.0.113.5, 10.0.0.7");
        assert_eq!(client_address(other, xff, &trusted), other);
        assert_eq!(client_address(proxy, xff, &trusted).to_string(), "10.0.0.7");
        assert_eq!(client_address(proxy, None, &trusted), proxy);
        assert_eq!(client_address(proxy, Some("junk"), &trusted), proxy);
    }

    #[test]
    fn networks_cover_their_ranges() {
        let pods = Network::parse("10.244.0.0/16").unwrap();
        assert!(pods.contains(&"10.244.3.7".parse().unwrap()));
        assert!(!pods.contains(&"10.245.0.1".parse().unwrap()));
        assert!(!pods.contains(&"::1".parse().unwrap()));
        let any = Network::parse("0.0.0.0/0").unwrap();
        assert!(any.contains(&"192.0.2.1".parse().unwrap()));
        let v6 = Network::parse("fd00::/8").unwrap();
        assert!(v6.contains(&"fd12::1".parse().unwrap()));
        assert!(Network::parse("10.0.0.0/33").is_none());
        assert!(Network::parse("nonsense").is_none());
        // A chain of routers inside the range is skipped to reach the client.
        let xff = Some("203.0.113.5, 10.244.1.1");
        let got = client_address("10.244.2.2".parse().unwrap(), xff, &[pods]);
        assert_eq!(got.to_string(), "203.0.113.5");
    }
}
