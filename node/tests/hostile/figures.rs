//! Figures: latency percentiles, the node's memory, one `FIGURE` line per case.

use super::*;

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(super) fn percentile(samples: &[Duration], p: f64) -> Duration {
    assert!(!samples.is_empty(), "no latency samples");
    let mut v = samples.to_vec();
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

pub(super) use atrium_testkit::process::rss_kib;

/// CPU time (user and system) the process `pid` has used, in seconds.
pub(super) fn cpu_seconds(pid: i32) -> f64 {
    atrium_testkit::cpu::process_cpu_seconds(pid as u32).expect("the node's CPU clock")
}

/// Prints one figure line and checks the relay-latency criterion: the median
/// during the attack under max(4x the baseline median, 50 ms).
pub(super) fn report(case: &str, base: &[Duration], during: &[Duration], mut extra: Value) {
    let (b50, d50) = (percentile(base, 0.5), percentile(during, 0.5));
    let ratio = d50.as_secs_f64() / b50.as_secs_f64().max(1e-6);
    extra["case"] = json!(case);
    extra["relay_p50_base_ms"] = json!((ms(b50) * 100.0).round() / 100.0);
    extra["relay_p50_attack_ms"] = json!((ms(d50) * 100.0).round() / 100.0);
    extra["relay_p99_attack_ms"] = json!((ms(percentile(during, 0.99)) * 100.0).round() / 100.0);
    extra["relay_ratio"] = json!((ratio * 100.0).round() / 100.0);
    extra["relay_samples"] = json!([base.len(), during.len()]);
    eprintln!("FIGURE {extra}");
    let bound = (b50 * 4).max(Duration::from_millis(50));
    assert!(
        d50 <= bound,
        "{case}: a bystander's relay p50 went from {b50:?} to {d50:?} during the attack \
         (bound {bound:?})"
    );
}
