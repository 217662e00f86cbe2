//! The page's head.

use std::fmt::Write;

use super::blocks::codes;
use super::{esc, STYLE};
use crate::report::Report;

/// The page's head: title, the run's shape, and a banner of problems or of a busy generator.
pub fn head_section(out: &mut String, r: &Report) {
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
    if let Some(reason) = &r.generator.generator_limited_reason {
        let _ = writeln!(
            out,
            "<p class=\"warn\"><b>The generator, not the server, was the limit:</b> {}</p>",
            esc(reason)
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
