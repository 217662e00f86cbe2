//! Latencies: HDR histograms in microseconds, summed up in milliseconds.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest latency kept apart from the rest: one minute, in microseconds.
const MAX_US: u64 = 60_000_000;

pub(super) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds")
}

/// One latency measure: the whole window, and the current second.
pub struct Latency {
    pub(super) total: Histogram<u64>,
    pub(super) second: Histogram<u64>,
}

impl Latency {
    pub(super) fn new() -> Latency {
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
