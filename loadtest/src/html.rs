//! `--html FILE`: the report as one self-contained page. The plots are SVG drawn here, inline;
//! the page loads nothing (no scripts, fonts, styles or images from elsewhere) and works
//! offline, attached to a ticket or opened from disk.

use std::fmt::Write;

use crate::measure::Summary;
use crate::report::{Report, Second};

/// Plot size in SVG units (the page scales them to its width).
const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 250.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 34.0;
/// Beyond this many points a series is drawn without per-point hover labels.
const MAX_MARKERS: usize = 600;

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
    let _ = write!(
        w,
        r#"<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{t}"><text class="title" x="{LEFT}" y="16">{t}</text>"#,
        t = esc(title)
    );
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
    let ystep = nice_step(ymax_seen, 4.0);
    let ymax = if ymax_seen > 0.0 {
        (ymax_seen / ystep).ceil() * ystep
    } else {
        1.0
    };
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
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
    // Horizontal grid and value labels.
    let mut y = 0.0;
    while y <= ymax + ystep * 0.01 {
        let _ = write!(
            w,
            r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT + pw,
            LEFT - 6.0,
            py(y) + 4.0,
            tick(y, ystep),
            yy = py(y)
        );
        y += ystep;
    }
    let _ = write!(
        w,
        r#"<text x="12" y="{:.1}" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(unit)
    );
    // Time axis.
    let xstep = nice_step(x1 - x0, 8.0).max(1.0);
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
    // The lines, broken where values are missing.
    for s in series {
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
        if s.points.len() <= MAX_MARKERS {
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
    }
    // Legend, top right.
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
    svg.push_str("</svg>");
    svg
}

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
    let step = nice_step(top, 4.0);
    let ymax = if top > 0.0 {
        (top / step).ceil() * step
    } else {
        1.0
    };
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let py = |y: f64| TOP + ph - (y / ymax).clamp(0.0, 1.0) * ph;
    let mut svg = String::new();
    let w = &mut svg;
    let _ = write!(
        w,
        r#"<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{t}"><text class="title" x="{LEFT}" y="16">{t}</text>"#,
        t = esc(title)
    );
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

/// The measured window in the per-second rows: from the start of its first second to the end
/// of its last.
fn measured_window(seconds: &[Second]) -> Option<(f64, f64)> {
    let first = seconds.iter().find(|s| s.phase == "measure")?;
    let last = seconds.iter().rev().find(|s| s.phase == "measure")?;
    Some(((first.t_s - 1.0).max(0.0), last.t_s))
}

fn per_second<'a>(
    r: &'a Report,
    name: &'a str,
    color: &'a str,
    value: impl Fn(&Second) -> Option<f64>,
) -> Series<'a> {
    Series {
        name,
        color,
        points: r.seconds.iter().map(|s| (s.t_s, value(s))).collect(),
    }
}

/// A latency value of a second, missing when nothing was recorded in it (the p99 of an empty
/// second is 0, which is not a latency).
fn latency(v: f64) -> Option<f64> {
    (v > 0.0).then_some(v)
}

fn figure(out: &mut String, svg: &str, caption: &str) {
    let _ = writeln!(
        out,
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        esc(caption)
    );
}

fn table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    out.push_str("<table><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", esc(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

fn pairs(out: &mut String, rows: &[(&str, String)]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(k, v)| vec![k.to_string(), v.clone()])
        .collect();
    table(out, &["measure", "value"], &rows);
}

fn codes(map: &std::collections::BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    parts.join(", ")
}

/// The whole page.
pub fn page(r: &Report) -> String {
    let mut out = String::new();
    head_section(&mut out, r);
    let window = measured_window(&r.seconds);
    latency_section(&mut out, r, window);
    throughput_section(&mut out, r, window);
    server_section(&mut out, r, window);
    problems_section(&mut out, r);
    generator_section(&mut out, r);
    drop_section(&mut out, r);
    profile_section(&mut out, r);
    out.push_str("<h2>The text report</h2>\n<pre>");
    out.push_str(&esc(r.text().trim()));
    out.push_str("</pre>\n</body></html>\n");
    out
}

/// The page's head: title, the run's shape, and a banner of problems or of a busy generator.
fn head_section(out: &mut String, r: &Report) {
    let title = if r.label.is_empty() {
        "atrium-loadtest".to_string()
    } else {
        format!("atrium-loadtest: {}", r.label)
    };
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(&title),
        esc(&title)
    );
    let _ = writeln!(
        out,
        "<p class=\"sub\">{} | {} users ({} connected in {:.1} s) in {} files of {} pages | \
         {} editors at {}/s | presence {}/s | {} s measured after {} s warm-up</p>",
        esc(&r.target),
        r.users,
        r.connected,
        r.connect_s,
        r.files,
        r.pages,
        r.editors,
        r.edit_rate,
        r.presence_rate,
        r.duration_s,
        r.warmup_s
    );

    let p = &r.problems;
    let closes: u64 = p.unexpected_closes.values().sum();
    let trouble = p.dropped_patches + p.out_of_order + closes + p.connection_errors;
    if trouble > 0 {
        let _ = writeln!(
            out,
            "<p class=\"bad\"><b>Problems:</b> {} dropped patches, {} out of order, {} \
             unexpected closes ({}), {} connection errors.</p>",
            p.dropped_patches,
            p.out_of_order,
            closes,
            esc(&codes(&p.unexpected_closes)),
            p.connection_errors
        );
    } else {
        out.push_str(
            "<p class=\"ok\">No dropped patches, versions out of order, unexpected closes or \
             connection errors.</p>\n",
        );
    }
    if let Some(reason) = &r.generator.busy_reason {
        let _ = writeln!(
            out,
            "<p class=\"warn\"><b>The generator was busy:</b> {}</p>",
            esc(reason)
        );
    }
}

/// Latency: a table of the percentiles, and p50 and p99 a second.
fn latency_section(out: &mut String, r: &Report, window: Option<(f64, f64)>) {
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

/// Throughput: messages a second against what the schedule asked for.
fn throughput_section(out: &mut String, r: &Report, window: Option<(f64, f64)>) {
    out.push_str("<h2>Throughput</h2>\n");
    figure(
        out,
        &line_chart(
            "Patches a second",
            "per s",
            &[
                per_second(r, "sent", BLUE, |s| Some(s.patches_sent)),
                per_second(r, "relays received", GREEN, |s| Some(s.patches_received)),
            ],
            window,
        ),
        &format!(
            "Scheduled: {} sent, {} relays received a second.",
            num(r.expected.patches_sent_per_s),
            num(r.expected.patches_received_per_s)
        ),
    );
    figure(
        out,
        &line_chart(
            "Presence a second",
            "per s",
            &[
                per_second(r, "sent", BLUE, |s| Some(s.presence_sent)),
                per_second(r, "messages received", ORANGE, |s| {
                    Some(s.presence_received)
                }),
            ],
            window,
        ),
        &format!(
            "Scheduled: {} presence updates sent a second.",
            num(r.expected.presence_sent_per_s)
        ),
    );
    let rt = &r.rates;
    let e = &r.expected;
    let rows = vec![
        vec![
            "patches sent".into(),
            num(rt.patches_sent_per_s),
            num(e.patches_sent_per_s),
        ],
        vec![
            "acks received".into(),
            num(rt.acks_received_per_s),
            num(e.patches_sent_per_s),
        ],
        vec![
            "patches received (relays)".into(),
            num(rt.patches_received_per_s),
            num(e.patches_received_per_s),
        ],
        vec![
            "presence sent".into(),
            num(rt.presence_sent_per_s),
            num(e.presence_sent_per_s),
        ],
        vec![
            "presence messages received".into(),
            num(rt.presence_received_per_s),
            String::new(),
        ],
        vec![
            "messages sent".into(),
            num(rt.messages_sent_per_s),
            String::new(),
        ],
        vec![
            "messages received".into(),
            num(rt.messages_received_per_s),
            String::new(),
        ],
        vec![
            "MB received".into(),
            num(rt.mb_received_per_s),
            String::new(),
        ],
    ];
    table(
        out,
        &["a second, over the window", "measured", "scheduled"],
        &rows,
    );
}

/// The server: CPU, memory and scheduling delay over the run.
fn server_section(out: &mut String, r: &Report, window: Option<(f64, f64)>) {
    out.push_str("<h2>Server</h2>\n");
    figure(
        out,
        &line_chart(
            "CPU, % of one core",
            "%",
            &[
                per_second(r, "server", PURPLE, |s| s.server_cpu_percent),
                per_second(r, "generator", GREY, |s| s.generator_cpu_percent),
            ],
            window,
        ),
        "The node's user + system CPU each second, and this tool's own for comparison.",
    );
    figure(
        out,
        &line_chart(
            "Server memory",
            "MB",
            &[Series {
                name: "resident",
                color: PURPLE,
                points: r.memory.iter().map(|m| (m.t_s, m.rss_mb)).collect(),
            }],
            window,
        ),
        "Resident memory of the node every second, the whole run.",
    );
    figure(
        out,
        &line_chart(
            "Connections",
            "sockets",
            &[
                per_second(r, "open (generator)", BLUE, |s| Some(s.open as f64)),
                Series {
                    name: "server",
                    color: GREEN,
                    points: r
                        .memory
                        .iter()
                        .map(|m| (m.t_s, m.connections.map(|c| c as f64)))
                        .collect(),
                },
            ],
            window,
        ),
        "Sockets the generator holds open, and the node's own count (with statistics on).",
    );
    let s = &r.server;
    pairs(
        out,
        &[
            ("CPU, % of a core", opt(s.cpu_percent)),
            ("CPU µs per message in + out", opt(s.cpu_us_per_message)),
            ("messages counted by", s.messages_counted_by.clone()),
            ("messages in a second", opt(s.messages_in_per_s)),
            ("messages out a second", opt(s.messages_out_per_s)),
            ("peak resident memory, MB", opt(s.max_rss_mb)),
            ("memory before the sockets, MB", opt(s.rss_before_mb)),
            ("memory at the end, MB", opt(s.rss_end_mb)),
            ("memory per connection, KB", opt(s.kb_per_connection)),
            ("scheduling delay p99, ms", opt(s.sched_delay_p99_ms)),
        ],
    );
}

/// Problems: drops, reorderings, unexpected closes and errors.
fn problems_section(out: &mut String, r: &Report) {
    let p = &r.problems;
    out.push_str("<h2>Problems</h2>\n");
    pairs(
        out,
        &[
            ("dropped patches", p.dropped_patches.to_string()),
            ("out of order", p.out_of_order.to_string()),
            ("unacked at the end", p.unacked_patches.to_string()),
            ("unexpected closes", codes(&p.unexpected_closes)),
            ("connection errors", p.connection_errors.to_string()),
            ("rate-limited notices", p.rate_limited.to_string()),
            ("notices", codes(&p.notices)),
            ("rejects", format!("{} ({})", p.rejected, codes(&p.rejects))),
            ("joined as viewer", p.joined_as_viewer.to_string()),
            ("sends skipped", p.sends_skipped.to_string()),
        ],
    );
}

/// The generator and the machine: was the measure itself sound?
fn generator_section(out: &mut String, r: &Report) {
    out.push_str("<h2>Generator and machine</h2>\n");
    let g = &r.generator;
    pairs(
        out,
        &[
            ("threads", g.workers.to_string()),
            ("scheduling delay p50, ms", num(g.sched_delay_ms.p50)),
            ("scheduling delay p99, ms", num(g.sched_delay_p99_ms)),
            ("scheduling delay max, ms", num(g.sched_delay_max_ms)),
            ("CPU, % of a core", opt(g.cpu_cores.map(|c| c * 100.0))),
            ("CPU µs per message", opt(g.cpu_us_per_message)),
            ("busy", g.busy_reason.clone().unwrap_or_else(|| "no".into())),
            ("machine cores", r.machine.cores.to_string()),
            ("busy cores over the window", opt(r.machine.busy_cores)),
            (
                "of which neither server nor generator",
                opt(r.machine.other_cores),
            ),
        ],
    );
}

/// The drop at the end, when asked for.
fn drop_section(out: &mut String, r: &Report) {
    if let Some(d) = &r.drop {
        out.push_str("<h2>Drop</h2>\n");
        pairs(
            out,
            &[
                (
                    "server stayed up",
                    if d.server_up { "yes" } else { "NO" }.into(),
                ),
                ("/health answered after, ms", opt(d.health_after_ms)),
                (
                    "connections at 0 after, ms",
                    opt(d.connections_zero_after_ms),
                ),
            ],
        );
    }
}

/// The CPU profile, when asked for.
fn profile_section(out: &mut String, r: &Report) {
    if let Some(pr) = &r.profile {
        out.push_str("<h2>CPU profile</h2>\n");
        let path = |p: &Option<std::path::PathBuf>| {
            p.as_ref()
                .map_or_else(|| "n/a".to_string(), |p| p.display().to_string())
        };
        pairs(
            out,
            &[
                ("flame graph", path(&pr.flamegraph_svg)),
                ("raw perf data", path(&pr.perf_data)),
                ("folded stacks", path(&pr.folded)),
                ("samples", pr.samples.to_string()),
                ("recorded, s", num(pr.recorded_s)),
                ("error", pr.error.clone().unwrap_or_else(|| "none".into())),
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::MemoryPoint;

    fn second(t: f64, phase: &str, p99: f64) -> Second {
        Second {
            t_s: t,
            phase: phase.into(),
            open: 10,
            patches_sent: 8.0,
            patches_received: 72.0,
            relay_p50_ms: p99 / 2.0,
            relay_p99_ms: p99,
            server_cpu_percent: Some(12.5),
            ..Default::default()
        }
    }

    fn report() -> Report {
        Report {
            label: "a <b>label</b> & more".into(),
            target: "spawned node at http://127.0.0.1:1".into(),
            seconds: vec![
                second(1.0, "warmup", 3.0),
                second(2.0, "measure", 4.0),
                second(3.0, "measure", 0.0),
                second(4.0, "close", 5.0),
            ],
            memory: vec![
                MemoryPoint {
                    t_s: 1.0,
                    rss_mb: Some(150.0),
                    connections: Some(10),
                },
                MemoryPoint {
                    t_s: 2.0,
                    rss_mb: None,
                    connections: None,
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn the_page_is_self_contained() {
        let html = page(&report());
        assert!(html.starts_with("<!doctype html>"));
        assert!(html.trim_end().ends_with("</html>"));
        for outside in ["<script", "src=", "<link", "@import", "url(", "@font-face"] {
            assert!(!html.contains(outside), "{outside}");
        }
        // Seven line plots and the bar chart, all inline.
        assert_eq!(html.matches("<svg").count(), 8);
        assert_eq!(html.matches("</svg>").count(), 8);
        assert!(html.contains("<polyline"));
        for title in [
            "Latency p99",
            "Latency p50",
            "Patches a second",
            "Presence a second",
            "CPU, % of one core",
            "Server memory",
            "Connections",
            "Latency percentiles over the measured window",
        ] {
            assert!(html.contains(title), "{title}");
        }
        assert!(html.contains("patch relay"));
    }

    #[test]
    fn text_from_the_run_is_escaped() {
        let html = page(&report());
        assert!(!html.contains("<b>label"));
        assert!(html.contains("a &lt;b&gt;label&lt;/b&gt; &amp; more"));
    }

    #[test]
    fn the_measured_window_is_shaded() {
        let r = report();
        assert_eq!(measured_window(&r.seconds), Some((1.0, 3.0)));
        assert!(page(&r).contains("class=\"band\""));
        assert_eq!(measured_window(&[]), None);
    }

    #[test]
    fn missing_values_break_the_line() {
        let series = [Series {
            name: "x",
            color: BLUE,
            points: vec![
                (0.0, Some(1.0)),
                (1.0, Some(2.0)),
                (2.0, None),
                (3.0, Some(4.0)),
            ],
        }];
        let svg = line_chart("t", "u", &series, None);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 3);
        let empty = line_chart("t", "u", &[], None);
        assert!(empty.contains("no data"));
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(100.0, 4.0), 50.0);
        assert_eq!(nice_step(7.0, 4.0), 2.0);
        assert_eq!(nice_step(0.3, 4.0), 0.1);
        assert_eq!(nice_step(0.0, 4.0), 1.0);
        assert_eq!(num(1234.5), "1234");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(1.2345), "1.23");
        assert_eq!(tick(40.0, 20.0), "40");
        assert_eq!(tick(0.3, 0.1), "0.3");
        assert_eq!(tick(0.25, 0.05), "0.25");
    }
}
