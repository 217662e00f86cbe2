//! Line plots over time, with the measured window shaded.

use std::fmt::Write;

use super::chart::{self, plot_area, HEIGHT, LEFT, RIGHT, TOP, WIDTH};
use super::{esc, num, tick};

/// Beyond this many points a series is drawn without per-point hover labels.
const MAX_MARKERS: usize = 600;

/// One line of a plot: (time in s, value); a missing value breaks the line.
pub struct Series<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub points: Vec<(f64, Option<f64>)>,
}

/// A line plot over time, with the measured window shaded.
pub fn line_chart(
    title: &str,
    unit: &str,
    series: &[Series],
    window: Option<(f64, f64)>,
) -> String {
    let xs = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(window.into_iter().flat_map(|(a, b)| [a, b]));
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in xs {
        x0 = x0.min(x);
        x1 = x1.max(x);
    }
    let ymax_seen = series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let mut svg = String::new();
    let w = &mut svg;
    chart::open(w, title);
    if !(x0.is_finite() && x1.is_finite()) {
        let _ = write!(
            w,
            r#"<text x="{}" y="{}">no data</text></svg>"#,
            WIDTH / 2.0 - 20.0,
            HEIGHT / 2.0
        );
        return svg;
    }
    if x1 - x0 < 1.0 {
        x1 = x0 + 1.0;
    }
    let (ystep, ymax) = chart::value_scale(ymax_seen);
    let (pw, ph) = plot_area();
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let py = |y: f64| TOP + ph - (y / ymax).clamp(0.0, 1.05) * ph;

    if let Some((a, b)) = window {
        let _ = write!(
            w,
            r#"<rect class="band" x="{:.1}" y="{TOP}" width="{:.1}" height="{ph}"><title>measured window</title></rect>"#,
            px(a),
            (px(b) - px(a)).max(0.0)
        );
    }
    chart::value_axis(w, unit, ystep, ymax, py);
    time_axis(w, x0, x1, px);
    for s in series {
        draw_series(w, s, unit, px, py);
    }
    legend(w, series);
    svg.push_str("</svg>");
    svg
}

/// The time axis along the bottom, in seconds since the start.
fn time_axis(w: &mut String, x0: f64, x1: f64, px: impl Fn(f64) -> f64) {
    let (pw, ph) = plot_area();
    let xstep = chart::nice_step(x1 - x0, 8.0).max(1.0);
    let mut x = (x0 / xstep).ceil() * xstep;
    while x <= x1 + 1e-9 {
        let _ = write!(
            w,
            r#"<line class="axis" x1="{xx:.1}" x2="{xx:.1}" y1="{:.1}" y2="{:.1}"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            TOP + ph,
            TOP + ph + 4.0,
            TOP + ph + 16.0,
            tick(x, xstep),
            xx = px(x)
        );
        x += xstep;
    }
    let _ = write!(
        w,
        r#"<line class="axis" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">seconds since start</text>"#,
        LEFT + pw,
        LEFT + pw,
        HEIGHT - 4.0,
        yy = TOP + ph
    );
}

/// One series: its line, broken where values are missing, and hover markers when few.
fn draw_series(
    w: &mut String,
    s: &Series,
    unit: &str,
    px: impl Fn(f64) -> f64,
    py: impl Fn(f64) -> f64,
) {
    let mut segment: Vec<String> = Vec::new();
    let flush = |segment: &mut Vec<String>, w: &mut String| {
        if segment.len() == 1 {
            segment.push(segment[0].clone());
        }
        if !segment.is_empty() {
            let _ = write!(
                w,
                r#"<polyline fill="none" stroke="{}" stroke-width="1.8" points="{}"/>"#,
                s.color,
                segment.join(" ")
            );
        }
        segment.clear();
    };
    for (x, v) in &s.points {
        match v {
            Some(v) if v.is_finite() => segment.push(format!("{:.1},{:.1}", px(*x), py(*v))),
            _ => flush(&mut segment, w),
        }
    }
    flush(&mut segment, w);
    if s.points.len() > MAX_MARKERS {
        return;
    }
    for (x, v) in &s.points {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            let _ = write!(
                w,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2" fill="{}"><title>{} at {} s: {} {}</title></circle>"#,
                px(*x),
                py(v),
                s.color,
                esc(s.name),
                num(*x),
                num(v),
                esc(unit)
            );
        }
    }
}

/// The legend, top right.
fn legend(w: &mut String, series: &[Series]) {
    let mut lx = WIDTH - RIGHT;
    for s in series.iter().rev() {
        let width = 18.0 + 6.5 * s.name.chars().count() as f64;
        lx -= width + 12.0;
        let _ = write!(
            w,
            r#"<rect x="{lx:.1}" y="8" width="12" height="4" fill="{}"/><text x="{:.1}" y="14">{}</text>"#,
            s.color,
            lx + 16.0,
            esc(s.name)
        );
    }
}
