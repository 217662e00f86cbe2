//! Buckets by key (an address, an email) within one memory bound.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Bucket;

/// Buckets by key (an address, an email), sharing one memory bound: when it is
/// reached, the least recently used key is forgotten to make room, so a
/// newcomer is never refused because others filled the table. (Forgetting a key
/// gives it a fresh bucket next time: a client can only win that back by
/// keeping `max_keys` other keys busier than its own.)
pub struct KeyedLimiter<K> {
    /// Tokens a second, and the most a bucket holds.
    rate: f64,
    burst: f64,
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
        Self::new(f64::from(per_minute) / 60.0, f64::from(burst), max_keys)
    }

    /// `per_second` a second, with at most `burst` at once.
    pub fn per_second(per_second: u32, burst: u32, max_keys: usize) -> Self {
        Self::new(f64::from(per_second), f64::from(burst), max_keys)
    }

    /// `per_second` bytes a second, at most `burst` at once: spent with [`Self::charge`]
    /// once a size is known, after [`Self::ready`] said the key is not in debt.
    pub fn bytes(per_second: u64, burst: u64, max_keys: usize) -> Self {
        Self::new(per_second as f64, burst as f64, max_keys)
    }

    fn new(rate: f64, burst: f64, max_keys: usize) -> Self {
        Self {
            rate,
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

    pub(super) fn check_at(&self, key: &K, now: Instant) -> Result<(), Duration> {
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

    pub(super) fn reserve_at(
        &self,
        key: &K,
        now: Instant,
        max_wait: Duration,
    ) -> Result<Duration, Duration> {
        self.with_bucket(key, now, |bucket| {
            let wait = bucket.wait(now);
            if wait > max_wait {
                return Err(wait);
            }
            bucket.charge(now, 1.0);
            Ok(wait)
        })
    }

    /// Takes `amount` tokens for `key` if it has them (never into debt).
    pub fn take_amount_at(&self, key: &K, amount: f64, now: Instant) -> bool {
        self.with_bucket(key, now, |bucket| bucket.take_amount(now, amount))
    }

    /// Whether `key` is out of debt: `Err(wait)` says how long until it is.
    pub fn ready(&self, key: &K) -> Result<(), Duration> {
        let now = Instant::now();
        match self.with_bucket(key, now, |bucket| bucket.debt(now)) {
            Duration::ZERO => Ok(()),
            wait => Err(wait.max(Duration::from_millis(1))),
        }
    }

    /// Takes `amount` from `key`'s bucket, into debt if need be: one message of any
    /// size goes when the key is out of debt, and the next waits until it is paid off.
    pub fn charge(&self, key: &K, amount: u64) {
        let now = Instant::now();
        self.with_bucket(key, now, |bucket| bucket.charge(now, amount as f64));
    }

    /// Gives `key` back `amount` it was charged for something never sent.
    pub fn refund(&self, key: &K, amount: u64) {
        let now = Instant::now();
        self.with_bucket(key, now, |bucket| bucket.give(now, amount as f64));
    }

    /// Settles at `spent` what was charged to `key` before some work (`charged`): the rest
    /// is taken, or what was not spent given back.
    pub fn settle(&self, key: &K, charged: u64, spent: u64) {
        match spent.checked_sub(charged) {
            Some(more) => self.charge(key, more),
            None => self.refund(key, charged - spent),
        }
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
        let (rate, burst) = (self.rate, self.burst);
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

/// Bytes charged to one key of a [`KeyedLimiter`] before the work they pay for, and
/// settled at what the work took: a client that leaves while it runs has paid for it.
pub struct Planned<K> {
    key: K,
    charged: u64,
}

impl<K: std::hash::Hash + Eq + Clone> Planned<K> {
    /// Nothing charged to `key` yet.
    pub fn new(key: K) -> Self {
        Self { key, charged: 0 }
    }

    pub fn key(&self) -> &K {
        &self.key
    }

    /// Charges `bytes` the work is about to take, before it.
    pub fn plan(&mut self, limiter: &KeyedLimiter<K>, bytes: u64) {
        limiter.charge(&self.key, bytes);
        self.charged = self.charged.saturating_add(bytes);
    }

    /// Settles the charge at the `spent` the work took (0 when it failed on the node's side).
    pub fn settle(self, limiter: &KeyedLimiter<K>, spent: u64) {
        limiter.settle(&self.key, self.charged, spent);
    }
}
