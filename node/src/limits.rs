//! Limits that keep one client (or one address, or one email) from taking more
//! than its share: token buckets, keyed buckets with a bounded memory, and
//! per-address socket counts.

use std::collections::{BTreeMap, HashMap};
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
        self.wait_for(now, 1.0)
    }

    /// Takes `amount` tokens whether or not they are there: the bucket may go into
    /// debt, which [`Bucket::debt`] then says how long to wait out. Used to pace
    /// reading by bytes, where the size is known only once a message is read.
    pub fn charge(&mut self, now: Instant, amount: f64) {
        self.refill(now);
        self.tokens -= amount;
    }

    /// How long until the bucket is out of debt.
    pub fn debt(&self, now: Instant) -> Duration {
        self.wait_for(now, 0.0)
    }

    fn wait_for(&self, now: Instant, amount: f64) -> Duration {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        let tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if tokens >= amount || self.rate <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((amount - tokens) / self.rate)
        }
    }
}

/// Buckets by key (an address, an email), sharing one memory bound: when it is
/// reached, the least recently used key is forgotten to make room, so a
/// newcomer is never refused because others filled the table. (Forgetting a key
/// gives it a fresh bucket next time: a client can only win that back by
/// keeping `max_keys` other keys busier than its own.)
pub struct KeyedLimiter<K> {
    per_minute: u32,
    burst: u32,
    max_keys: usize,
    table: Mutex<Lru<K>>,
}

/// The buckets, and their keys by last use (oldest first).
struct Lru<K> {
    buckets: HashMap<K, (Bucket, u64)>,
    by_use: BTreeMap<u64, K>,
    next: u64,
}

impl<K: std::hash::Hash + Eq + Clone> KeyedLimiter<K> {
    /// `per_minute` a minute, with a burst of as many.
    pub fn per_minute(per_minute: u32, max_keys: usize) -> Self {
        Self::with_burst(per_minute, per_minute, max_keys)
    }

    /// `per_minute` a minute, with at most `burst` at once.
    pub fn with_burst(per_minute: u32, burst: u32, max_keys: usize) -> Self {
        Self {
            per_minute,
            burst,
            max_keys: max_keys.max(1),
            table: Mutex::new(Lru {
                buckets: HashMap::new(),
                by_use: BTreeMap::new(),
                next: 0,
            }),
        }
    }

    /// Whether `key` may go ahead now.
    pub fn allow(&self, key: &K) -> bool {
        self.check(key).is_ok()
    }

    /// Takes a token for `key`, or says how long until there is one.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.check_at(key, Instant::now())
    }

    fn check_at(&self, key: &K, now: Instant) -> Result<(), Duration> {
        self.with_bucket(key, now, |bucket| {
            if bucket.take(now) {
                Ok(())
            } else {
                Err(bucket.wait(now).max(Duration::from_millis(1)))
            }
        })
    }

    /// Takes a token for `key` now or from the future: `Ok(wait)` says how long the
    /// caller must wait before going ahead (zero when a token is there), so callers
    /// queue up in order instead of being refused. A token further away than
    /// `max_wait` is not taken: `Err(wait)` says how long until one is there.
    pub fn reserve(&self, key: &K, max_wait: Duration) -> Result<Duration, Duration> {
        self.reserve_at(key, Instant::now(), max_wait)
    }

    fn reserve_at(&self, key: &K, now: Instant, max_wait: Duration) -> Result<Duration, Duration> {
        self.with_bucket(key, now, |bucket| {
            let wait = bucket.wait(now);
            if wait > max_wait {
                return Err(wait);
            }
            bucket.charge(now, 1.0);
            Ok(wait)
        })
    }

    /// Runs `f` on `key`'s bucket (made full if the key is new), marking the key
    /// as the most recently used.
    fn with_bucket<T>(&self, key: &K, now: Instant, f: impl FnOnce(&mut Bucket) -> T) -> T {
        let mut guard = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let t = &mut *guard;
        let stamp = t.next;
        t.next += 1;
        if let Some((_, used)) = t.buckets.get(key) {
            t.by_use.remove(used);
        } else {
            while t.buckets.len() >= self.max_keys {
                // Full: the least recently used key makes room.
                let Some((_, oldest)) = t.by_use.pop_first() else {
                    break;
                };
                t.buckets.remove(&oldest);
            }
        }
        t.by_use.insert(stamp, key.clone());
        let rate = f64::from(self.per_minute) / 60.0;
        let burst = f64::from(self.burst);
        let (bucket, used) = t
            .buckets
            .entry(key.clone())
            .or_insert_with(|| (Bucket::new(rate, burst, now), stamp));
        *used = stamp;
        f(bucket)
    }

    /// Keys remembered now.
    pub fn len(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .buckets
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The key a client address is limited by: the address itself for IPv4, its
/// /64 for IPv6 (one subscriber or host usually holds a whole /64, so counting
/// single IPv6 addresses would let one client be 2^64 clients). An IPv4 address
/// mapped into IPv6 counts as the IPv4 address.
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(
                u128::from(v6) & !((1u128 << 64) - 1),
            )),
        },
    }
}

/// Open TCP connections of the node (HTTP and sockets together), capped: each
/// accepted connection holds a slot until its stream is gone (an upgraded socket
/// keeps its connection's slot for its whole life).
pub struct ConnectionCap {
    cap: usize,
    open: std::sync::atomic::AtomicUsize,
}

impl ConnectionCap {
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap,
            open: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// A slot for a new connection; `None` at the cap.
    pub fn take(self: &Arc<Self>) -> Option<ConnectionSlot> {
        use std::sync::atomic::Ordering;
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            })
            .ok()
            .map(|_| ConnectionSlot(self.clone()))
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn cap(&self) -> usize {
        self.cap
    }
}

/// One connection's slot, given back when dropped.
pub struct ConnectionSlot(Arc<ConnectionCap>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
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
        // IPv6 counts by /64 (see `address_key`).
        let addr = address_key(addr);
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
    fn a_charged_bucket_waits_out_its_debt() {
        let t0 = Instant::now();
        let mut b = Bucket::new(1000.0, 1000.0, t0);
        assert_eq!(b.debt(t0), Duration::ZERO);
        b.charge(t0, 3000.0);
        let d = b.debt(t0);
        assert!(
            d > Duration::from_millis(1990) && d <= Duration::from_millis(2000),
            "{d:?}"
        );
        assert_eq!(b.debt(t0 + Duration::from_secs(2)), Duration::ZERO);
    }

    #[test]
    fn keyed_limiter_stays_bounded() {
        let l = KeyedLimiter::per_minute(2, 3);
        assert!(l.allow(&"a"));
        assert!(l.allow(&"a"));
        assert!(!l.allow(&"a"));
        assert!(l.allow(&"b"));
        assert!(l.allow(&"c"));
        // Three active keys: a fourth is let in, and the least recently used
        // ("a") is forgotten to make room; memory stays at three keys.
        assert!(l.allow(&"d"));
        assert_eq!(l.len(), 3);
        assert!(l.allow(&"a"), "a was forgotten, so it starts afresh");
        assert_eq!(l.len(), 3);
    }

    #[test]
    fn a_full_table_never_refuses_a_newcomer() {
        // The review's case: the table full of keys that are all still active.
        let l = KeyedLimiter::per_minute(1, 100);
        for i in 0..100 {
            assert!(l.allow(&i));
        }
        for i in 100..10_000 {
            assert!(l.allow(&i), "newcomer {i} refused");
            assert!(l.len() <= 100);
        }
        // A recently used key survives the churn of others better than an old one.
        let l = KeyedLimiter::per_minute(1, 3);
        assert!(l.allow(&"busy"));
        assert!(l.allow(&"x"));
        assert!(!l.allow(&"busy"), "busy is out of tokens");
        assert!(l.allow(&"y"));
        assert!(l.allow(&"z"), "x, the oldest, makes room");
        assert!(!l.allow(&"busy"), "busy is remembered, still empty");
    }

    #[test]
    fn keyed_limiter_says_when_to_come_back() {
        let t0 = Instant::now();
        let l = KeyedLimiter::with_burst(30, 2, 10);
        assert!(l.check_at(&"k", t0).is_ok());
        assert!(l.check_at(&"k", t0).is_ok());
        let wait = l.check_at(&"k", t0).unwrap_err();
        // 30 a minute: one every 2 s.
        assert!(wait > Duration::from_millis(1900) && wait <= Duration::from_secs(2));
        assert!(l.check_at(&"k", t0 + Duration::from_secs(2)).is_ok());
    }

    #[test]
    fn reservations_queue_up_in_order_and_refuse_past_the_longest_wait() {
        let t0 = Instant::now();
        // 60 a minute (one a second), two at once.
        let l = KeyedLimiter::with_burst(60, 2, 10);
        let max = Duration::from_millis(2500);
        assert_eq!(l.reserve_at(&"k", t0, max), Ok(Duration::ZERO));
        assert_eq!(l.reserve_at(&"k", t0, max), Ok(Duration::ZERO));
        // The next ones wait their turn: 1 s, then 2 s.
        let near = |d: Duration, secs: f64| (d.as_secs_f64() - secs).abs() < 0.01;
        assert!(near(l.reserve_at(&"k", t0, max).unwrap(), 1.0));
        assert!(near(l.reserve_at(&"k", t0, max).unwrap(), 2.0));
        // A turn 3 s away is past the longest wait: refused, and not taken.
        assert!(near(l.reserve_at(&"k", t0, max).unwrap_err(), 3.0));
        assert!(near(l.reserve_at(&"k", t0, max).unwrap_err(), 3.0));
        // Time pays the queue off.
        let later = t0 + Duration::from_secs(3);
        assert!(near(l.reserve_at(&"k", later, max).unwrap(), 0.0));
        // Another key has its own bucket.
        assert_eq!(l.reserve_at(&"other", t0, max), Ok(Duration::ZERO));
    }

    #[test]
    fn ipv6_is_limited_by_its_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:1:2:3".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        assert_eq!(address_key(a).to_string(), "2001:db8:1:2::");
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(address_key(v4), v4);
        assert_ne!(address_key(v4), address_key("192.0.2.8".parse().unwrap()));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_key(mapped), v4);
        // Sockets per address: two addresses of one /64 share one count.
        let counts = Arc::new(AddressCounts::new(1));
        let _slot = counts.take(a).unwrap();
        assert!(counts.take(b).is_none(), "same /64");
        assert!(counts.take(c).is_some(), "another /64");
        // And so do the keyed limiters, keyed by `address_key`.
        let l = KeyedLimiter::per_minute(1, 10);
        assert!(l.allow(&address_key(a)));
        assert!(!l.allow(&address_key(b)));
    }

    #[test]
    fn connection_slots_are_capped_and_come_back() {
        let cap = ConnectionCap::new(2);
        let a = cap.take().unwrap();
        let b = cap.take().unwrap();
        assert!(cap.take().is_none());
        assert_eq!(cap.open(), 2);
        drop(a);
        let c = cap.take().unwrap();
        drop((b, c));
        assert_eq!(cap.open(), 0);
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
