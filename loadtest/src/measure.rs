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

use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest latency kept apart from the rest: one minute, in microseconds.
const MAX_US: u64 = 60_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds")
}

/// One latency measure: the whole window, and the current second.
pub struct Latency {
    total: Histogram<u64>,
    second: Histogram<u64>,
}

impl Latency {
    fn new() -> Latency {
        Latency {
            total: histogram(),
            second: histogram(),
        }
    }
}

/// p50/p90/p99/max in milliseconds, and how many samples.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Summary {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    pub count: u64,
}

impl Summary {
    pub fn of(h: &Histogram<u64>) -> Summary {
        if h.is_empty() {
            return Summary::default();
        }
        let ms = |us: u64| round3(us as f64 / 1000.0);
        Summary {
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
            mean: round3(h.mean() / 1000.0),
            count: h.len(),
        }
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Counters, all for the whole run.
#[derive(Default)]
pub struct Counters {
    pub patches_sent: AtomicU64,
    pub acks_received: AtomicU64,
    pub patches_received: AtomicU64,
    pub presence_sent: AtomicU64,
    pub presence_received: AtomicU64,
    pub messages_sent: AtomicU64,
    pub messages_received: AtomicU64,
    pub bytes_received: AtomicU64,
    pub sends_skipped: AtomicU64,
    pub dropped_patches: AtomicU64,
    pub out_of_order: AtomicU64,
    pub connection_errors: AtomicU64,
    /// Joins whose connection was reset, or ended without a close frame, between the TCP
    /// connect and the welcome (a refused upgrade answers with a status and is not one).
    pub handshake_resets: AtomicU64,
    pub rate_limited: AtomicU64,
    pub rejected: AtomicU64,
    pub joined_as_viewer: AtomicU64,
    pub connected: AtomicU64,
    pub open: AtomicU64,
    pub unacked_patches: AtomicU64,
    /// Cluster mode: sockets that came back after the server closed them.
    pub reconnects: AtomicU64,
    /// Cluster mode: reconnection attempts that failed (each retried with backoff).
    pub reconnect_failures: AtomicU64,
    /// Cluster mode: first joins that failed with a close asking to come back, and were retried.
    pub join_retries: AtomicU64,
    /// Cluster mode: unconfirmed patches sent again after a reconnect.
    pub resent_patches: AtomicU64,
    /// Cluster mode: when the latest reconnect got its welcome, µs since the origin.
    pub last_rejoin_us: AtomicU64,
}

/// A copy of the counters that matter for rates, at one instant.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Snapshot {
    pub patches_sent: u64,
    pub acks_received: u64,
    pub patches_received: u64,
    pub presence_sent: u64,
    pub presence_received: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub bytes_received: u64,
    pub sends_skipped: u64,
}

impl Snapshot {
    /// Per-second rates between two snapshots `secs` apart.
    pub fn rates(&self, later: &Snapshot, secs: f64) -> [f64; 9] {
        let r = |a: u64, b: u64| {
            if secs > 0.0 {
                b.saturating_sub(a) as f64 / secs
            } else {
                0.0
            }
        };
        [
            r(self.patches_sent, later.patches_sent),
            r(self.acks_received, later.acks_received),
            r(self.patches_received, later.patches_received),
            r(self.presence_sent, later.presence_sent),
            r(self.presence_received, later.presence_received),
            r(self.messages_sent, later.messages_sent),
            r(self.messages_received, later.messages_received),
            r(self.bytes_received, later.bytes_received),
            r(self.sends_skipped, later.sends_skipped),
        ]
    }
}

/// Builds a `$ty` whose count fields are read from the counters of the same names, plus any
/// other fields given as `name: value`.
macro_rules! from_counters {
    ($ty:ident, $counters:expr, [$($count:ident),+ $(,)?] $(, $field:ident: $value:expr)* $(,)?) => {{
        let c = &$counters;
        $ty {
            $($count: c.$count.load(std::sync::atomic::Ordering::Relaxed),)+
            $($field: $value,)*
        }
    }};
}
pub(crate) use from_counters;

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

/// User plus system CPU seconds of this process: its CPU clock (nanoseconds), else
/// /proc/self/stat (clock ticks, usually 10 ms).
pub fn own_cpu_seconds() -> Option<f64> {
    crate::node::process_cpu_seconds(std::process::id()).or_else(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        crate::node::cpu_seconds_from_stat(&stat)
    })
}

/// (busy, total) CPU seconds of the whole machine since boot, from the text of /proc/stat.
pub fn machine_cpu_from_stat(stat: &str) -> Option<(f64, f64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    let total: f64 = v.iter().take(8).sum();
    let idle = v[3] + v[4];
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    Some(((total - idle) / ticks, total / ticks))
}

/// The whole machine's busy CPU seconds so far.
pub fn machine_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    machine_cpu_from_stat(&stat).map(|(busy, _)| busy)
}

#[cfg(test)]
mod tests;
