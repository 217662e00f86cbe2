//! What the clients record: latency histograms, counters, problems by code, and the
//! generator's own scheduling delay.
//!
//! Latencies are recorded in microseconds into HDR histograms, only while the measured window
//! is open; each also goes into a per-second histogram that the sampler takes every second.
//! Counters run for the whole run; rates are taken from their change over the window.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod counters;
mod cpu;
mod latency;

#[cfg(test)]
mod tests;

pub(crate) use counters::from_counters;
pub use counters::{Counters, Snapshot};
pub use cpu::{machine_cpu_seconds, own_cpu_seconds};
pub use latency::{round3, Latency, Summary};

/// Everything the clients and the probe record into, shared by all of them.
pub struct Measures {
    origin: Instant,
    measuring: AtomicBool,
    pub counters: Counters,
    pub relay: Mutex<Latency>,
    pub ack: Mutex<Latency>,
    pub presence: Mutex<Latency>,
    pub generator_delay: Mutex<Latency>,
    pub unexpected_closes: Mutex<BTreeMap<String, u64>>,
    pub rejects: Mutex<BTreeMap<String, u64>>,
    pub notices: Mutex<BTreeMap<String, u64>>,
}

impl Measures {
    pub fn new() -> Arc<Measures> {
        Arc::new(Measures {
            origin: Instant::now(),
            measuring: AtomicBool::new(false),
            counters: Counters::default(),
            relay: Mutex::new(Latency::new()),
            ack: Mutex::new(Latency::new()),
            presence: Mutex::new(Latency::new()),
            generator_delay: Mutex::new(Latency::new()),
            unexpected_closes: Mutex::new(BTreeMap::new()),
            rejects: Mutex::new(BTreeMap::new()),
            notices: Mutex::new(BTreeMap::new()),
        })
    }

    /// The shared clock carried in `t`: milliseconds since the generator started, to the µs.
    pub fn now_ms(&self) -> f64 {
        (self.origin.elapsed().as_micros() as f64) / 1000.0
    }

    pub fn elapsed(&self) -> Duration {
        self.origin.elapsed()
    }

    pub fn origin(&self) -> Instant {
        self.origin
    }

    pub fn set_measuring(&self, on: bool) {
        self.measuring.store(on, Ordering::SeqCst);
    }

    pub fn measuring(&self) -> bool {
        self.measuring.load(Ordering::Relaxed)
    }

    /// Records a latency given the `t` a message carried (our clock, in ms).
    pub fn record_since(&self, which: &Mutex<Latency>, sent_ms: f64) {
        let us = ((self.now_ms() - sent_ms) * 1000.0).max(1.0) as u64;
        self.record_us(which, us);
    }

    pub fn record_us(&self, which: &Mutex<Latency>, us: u64) {
        let measuring = self.measuring();
        let mut h = which.lock().unwrap_or_else(|e| e.into_inner());
        h.second.saturating_record(us.max(1));
        if measuring {
            h.total.saturating_record(us.max(1));
        }
    }

    pub fn count(map: &Mutex<BTreeMap<String, u64>>, code: &str) {
        let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry(code.to_string()).or_default() += 1;
    }

    pub fn snapshot(&self) -> Snapshot {
        from_counters!(
            Snapshot,
            self.counters,
            [
                patches_sent,
                acks_received,
                patches_received,
                presence_sent,
                presence_received,
                messages_sent,
                messages_received,
                bytes_received,
                sends_skipped,
                delivered_updates,
            ],
        )
    }

    /// The summary of the whole window.
    pub fn total(which: &Mutex<Latency>) -> Summary {
        Summary::of(&which.lock().unwrap_or_else(|e| e.into_inner()).total)
    }

    /// The summary of the last second, which starts a new one.
    pub fn take_second(which: &Mutex<Latency>) -> Summary {
        let mut h = which.lock().unwrap_or_else(|e| e.into_inner());
        let s = Summary::of(&h.second);
        h.second.reset();
        s
    }
}

pub fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// Watches the generator's own runtime: sleeps 10 ms at a time and records how late it woke,
/// as the node does for its scheduling delay. Runs until `stop` turns true.
pub async fn probe(measures: Arc<Measures>, stop: Arc<AtomicBool>) {
    let step = Duration::from_millis(10);
    while !stop.load(Ordering::Relaxed) {
        let before = Instant::now();
        tokio::time::sleep(step).await;
        let late = before.elapsed().saturating_sub(step);
        measures.record_us(&measures.generator_delay, late.as_micros() as u64);
    }
}
