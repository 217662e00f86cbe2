//! `--html FILE`: the report as one self-contained page. The plots are SVG drawn here, inline;
//! the page loads nothing (no scripts, fonts, styles or images from elsewhere) and works
//! offline, attached to a ticket or opened from disk.

use crate::report::Report;

mod bar_chart;
mod blocks;
mod chart;
mod head;
mod latency;
mod line_chart;
mod server;
mod soundness;
mod throughput;

#[cfg(test)]
mod tests;

pub use bar_chart::bar_chart;
pub use line_chart::{line_chart, Series};

const BLUE: &str = "#1c7ed6";
const ORANGE: &str = "#f76707";
const GREEN: &str = "#2b8a3e";
const PURPLE: &str = "#7048e8";
const GREY: &str = "#868e96";

const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 2rem auto;
       max-width: 62rem; padding: 0 1rem; color: #212529; line-height: 1.4; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { font-size: 1.15rem; margin-top: 2rem;
     border-bottom: 1px solid #dee2e6; padding-bottom: .2rem; }
.sub { color: #495057; margin-top: 0; }
.warn { background: #fff4e6; border-left: 4px solid #f76707; padding: .5rem .8rem; }
.bad { background: #fff5f5; border-left: 4px solid #e03131; padding: .5rem .8rem; }
.ok { background: #ebfbee; border-left: 4px solid #2b8a3e; padding: .5rem .8rem; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .92rem; }
th, td { padding: .2rem .7rem; border-bottom: 1px solid #e9ecef; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f8f9fa; }
figure { margin: 1rem 0; } figcaption { font-size: .85rem; color: #495057; }
svg { width: 100%; height: auto; display: block; }
svg text { font-family: inherit; font-size: 11px; fill: #495057; }
svg .title { font-size: 13px; font-weight: 600; fill: #212529; }
.band { fill: #e7f5ff; } .grid { stroke: #e9ecef; } .axis { stroke: #adb5bd; }
pre { background: #f8f9fa; padding: .8rem; overflow-x: auto; font-size: .8rem; }
";

/// Escapes text for HTML and SVG.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number with as many decimals as its size deserves.
fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A tick label: as many decimals as the step between ticks needs.
fn tick(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()).clamp(0.0, 6.0) as usize
    };
    format!("{v:.decimals$}")
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), num)
}

/// The whole page.
pub fn page(r: &Report) -> String {
    let mut out = String::new();
    head::head_section(&mut out, r);
    let window = blocks::measured_window(&r.seconds);
    latency::latency_section(&mut out, r, window);
    throughput::throughput_section(&mut out, r, window);
    server::server_section(&mut out, r, window);
    soundness::problems_section(&mut out, r);
    soundness::generator_section(&mut out, r);
    soundness::drop_section(&mut out, r);
    soundness::restores_section(&mut out, r);
    soundness::server_patches_section(&mut out, r);
    soundness::profile_section(&mut out, r);
    out.push_str("<h2>The text report</h2>\n<pre>");
    out.push_str(&esc(r.text().trim()));
    out.push_str("</pre>\n</body></html>\n");
    out
}
