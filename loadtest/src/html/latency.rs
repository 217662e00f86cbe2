//! The latency section.

use super::blocks::{figure, latency, per_second, table};
use super::{bar_chart, line_chart, num, Series, BLUE, GREEN, ORANGE};
use crate::report::{Report, Second};

/// Latency: a table of the percentiles, and p50 and p99 a second.
pub fn latency_section(out: &mut String, r: &Report, window: Option<(f64, f64)>) {
    out.push_str("<h2>Latency</h2>\n");
    let groups = [
        ("patch relay", r.patch_relay_ms),
        ("patch ack", r.patch_ack_ms),
        ("presence", r.presence_ms),
    ];
    figure(
        out,
        &bar_chart(
            "Latency percentiles over the measured window",
            "ms",
            &groups,
        ),
        "From an HDR histogram of every sample in the window (presence: 1 message in 10).",
    );
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|(name, s)| {
            vec![
                name.to_string(),
                num(s.p50),
                num(s.p90),
                num(s.p99),
                num(s.max),
                num(s.mean),
                s.count.to_string(),
            ]
        })
        .collect();
    table(
        out,
        &["ms", "p50", "p90", "p99", "max", "mean", "samples"],
        &rows,
    );
    let lat = [("relay", BLUE), ("ack", GREEN), ("presence", ORANGE)];
    type Pick = fn(&Second) -> f64;
    let p99s: [Pick; 3] = [|s| s.relay_p99_ms, |s| s.ack_p99_ms, |s| s.presence_p99_ms];
    let p50s: [Pick; 3] = [|s| s.relay_p50_ms, |s| s.ack_p50_ms, |s| s.presence_p50_ms];
    for (which, picks) in [("p99", p99s), ("p50", p50s)] {
        let series: Vec<Series> = lat
            .iter()
            .zip(picks)
            .map(|((name, color), pick)| per_second(r, name, color, move |s| latency(pick(s))))
            .collect();
        figure(
            out,
            &line_chart(
                &format!("Latency {which}, second by second"),
                "ms",
                &series,
                window,
            ),
            "Each point is one second's samples (the warm-up and the end included); the shaded \
             band is the measured window.",
        );
    }
}
