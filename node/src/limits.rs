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
mod tests;
