//! A token bucket: the rate every limit of the node is made of.

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

    /// Takes `amount` tokens if they are all there.
    pub fn take_amount(&mut self, now: Instant, amount: f64) -> bool {
        self.refill(now);
        if self.tokens >= amount {
            self.tokens -= amount;
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

    /// Gives back `amount` taken by [`Bucket::charge`] for something that did not happen
    /// after all, up to the bucket's size.
    pub fn give(&mut self, now: Instant, amount: f64) {
        self.refill(now);
        self.tokens = (self.tokens + amount).min(self.burst);
    }

    /// Whether it holds all it may: no different from a new one.
    pub fn is_full(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens + elapsed * self.rate >= self.burst
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
