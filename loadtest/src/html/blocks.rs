//! The pieces sections are made of: figures, tables, per-second series.

use std::fmt::Write;

use super::{esc, Series};
use crate::report::{Report, Second};

/// The measured window in the per-second rows: from the start of its first second to the end
/// of its last.
pub fn measured_window(seconds: &[Second]) -> Option<(f64, f64)> {
    let first = seconds.iter().find(|s| s.phase == "measure")?;
    let last = seconds.iter().rev().find(|s| s.phase == "measure")?;
    Some(((first.t_s - 1.0).max(0.0), last.t_s))
}

pub fn per_second<'a>(
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
pub fn latency(v: f64) -> Option<f64> {
    (v > 0.0).then_some(v)
}

pub fn figure(out: &mut String, svg: &str, caption: &str) {
    let _ = writeln!(
        out,
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        esc(caption)
    );
}

pub fn table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
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

pub fn pairs(out: &mut String, rows: &[(&str, String)]) {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(k, v)| vec![k.to_string(), v.clone()])
        .collect();
    table(out, &["measure", "value"], &rows);
}

pub fn codes(map: &std::collections::BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    parts.join(", ")
}

/// A `--pin-*` CPU list as given, or "no".
pub fn pinned(cpus: &Option<String>) -> String {
    cpus.clone().unwrap_or_else(|| "no".into())
}
