//! Making metric families and registering them: every family of the router once, so a name
//! given twice or an invalid one fails at start.

use prometheus::core::Collector;
use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

/// The latency buckets, in seconds: a fraction of a millisecond on one machine to seconds on
/// a saturated one.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// Makes families registered in one registry.
pub(super) struct Families(pub(super) Registry);

impl Families {
    /// Registers a new family and gives it back.
    fn registered<M: Collector + Clone + 'static>(&self, made: prometheus::Result<M>) -> M {
        let metric = made.expect("valid metric");
        self.0
            .register(Box::new(metric.clone()))
            .expect("unique metric");
        metric
    }

    pub(super) fn counter(&self, name: &str, help: &str) -> IntCounter {
        self.registered(IntCounter::new(name, help))
    }

    pub(super) fn counter_vec(&self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        self.registered(IntCounterVec::new(Opts::new(name, help), labels))
    }

    pub(super) fn gauge(&self, name: &str, help: &str) -> IntGauge {
        self.registered(IntGauge::new(name, help))
    }

    pub(super) fn gauge_vec(&self, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
        self.registered(IntGaugeVec::new(Opts::new(name, help), labels))
    }

    /// A latency histogram with the router's buckets.
    pub(super) fn latency(&self, name: &str, help: &str) -> Histogram {
        let opts = HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec());
        self.registered(Histogram::with_opts(opts))
    }
}
