//! The percentile bar chart.

use std::fmt::Write;

use super::chart::{self, plot_area, LEFT, RIGHT, TOP, WIDTH};
use super::{esc, num, BLUE, ORANGE, PURPLE};
use crate::measure::Summary;

/// A bar of the percentile chart: its name, colour, and which value of a summary it shows.
type Bar = (&'static str, &'static str, fn(&Summary) -> f64);

/// Grouped bars: for each group (a latency measure), one bar per percentile.
pub fn bar_chart(title: &str, unit: &str, groups: &[(&str, Summary)]) -> String {
    let bars: [Bar; 3] = [
        ("p50", BLUE, |s| s.p50),
        ("p90", ORANGE, |s| s.p90),
        ("p99", PURPLE, |s| s.p99),
    ];
    let top = groups
        .iter()
        .flat_map(|(_, s)| bars.iter().map(move |b| (b.2)(s)))
        .fold(0.0f64, f64::max);
    let (step, ymax) = chart::value_scale(top);
    let (pw, ph) = plot_area();
    let py = |y: f64| TOP + ph - (y / ymax).clamp(0.0, 1.0) * ph;
    let mut svg = String::new();
    let w = &mut svg;
    chart::open(w, title);
    chart::value_axis(w, unit, step, ymax, py);
    let slot = pw / groups.len().max(1) as f64;
    let bar = (slot * 0.7 / bars.len() as f64).min(60.0);
    for (g, (name, s)) in groups.iter().enumerate() {
        let gx = LEFT + slot * g as f64 + (slot - bar * bars.len() as f64) / 2.0;
        for (b, (label, color, value)) in bars.iter().enumerate() {
            let v = value(s);
            let x = gx + bar * b as f64;
            let _ = write!(
                w,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{} {label}: {} {}</title></rect><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                py(v),
                bar - 3.0,
                (TOP + ph - py(v)).max(0.0),
                esc(name),
                num(v),
                esc(unit),
                x + (bar - 3.0) / 2.0,
                py(v) - 3.0,
                num(v)
            );
        }
        let _ = write!(
            w,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{} ({} samples)</text>"#,
            LEFT + slot * (g as f64 + 0.5),
            TOP + ph + 16.0,
            esc(name),
            s.count
        );
    }
    let mut lx = WIDTH - RIGHT;
    for (label, color, _) in bars.iter().rev() {
        lx -= 46.0;
        let _ = write!(
            w,
            r#"<rect x="{lx:.1}" y="6" width="10" height="10" fill="{color}"/><text x="{:.1}" y="15">{label}</text>"#,
            lx + 14.0
        );
    }
    svg.push_str("</svg>");
    svg
}
