//! What every plot shares: its size, its title and its value axis.

use std::fmt::Write;

use super::{esc, tick};

/// Plot size in SVG units (the page scales them to its width).
pub const WIDTH: f64 = 760.0;
pub const HEIGHT: f64 = 250.0;
pub const LEFT: f64 = 60.0;
pub const RIGHT: f64 = 14.0;
pub const TOP: f64 = 30.0;
pub const BOTTOM: f64 = 34.0;

/// The plotting area inside the margins: (width, height).
pub fn plot_area() -> (f64, f64) {
    (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM)
}

/// A round step that cuts `range` into about `ticks` parts: 1, 2 or 5 × a power of ten.
pub fn nice_step(range: f64, ticks: f64) -> f64 {
    if !(range.is_finite() && range > 0.0) {
        return 1.0;
    }
    let raw = range / ticks;
    let magnitude = 10f64.powf(raw.log10().floor());
    let f = raw / magnitude;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// The value axis for values up to `top`: (its step, its round maximum).
pub fn value_scale(top: f64) -> (f64, f64) {
    let step = nice_step(top, 4.0);
    let ymax = if top > 0.0 {
        (top / step).ceil() * step
    } else {
        1.0
    };
    (step, ymax)
}

/// Opens the SVG element with the plot's title.
pub fn open(w: &mut String, title: &str) {
    let _ = write!(
        w,
        r#"<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{t}"><text class="title" x="{LEFT}" y="16">{t}</text>"#,
        t = esc(title)
    );
}

/// The horizontal grid with its value labels, and the unit along the left edge.
pub fn value_axis(w: &mut String, unit: &str, step: f64, ymax: f64, py: impl Fn(f64) -> f64) {
    let (pw, ph) = plot_area();
    let mut y = 0.0;
    while y <= ymax + step * 0.01 {
        let _ = write!(
            w,
            r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT + pw,
            LEFT - 6.0,
            py(y) + 4.0,
            tick(y, step),
            yy = py(y)
        );
        y += step;
    }
    let _ = write!(
        w,
        r#"<text x="12" y="{:.1}" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(unit)
    );
}
