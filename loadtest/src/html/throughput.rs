//! The throughput section.

use super::blocks::{figure, per_second, table};
use super::{line_chart, num, BLUE, GREEN, ORANGE};
use crate::report::Report;

/// Throughput: messages a second against what the schedule asked for.
pub fn throughput_section(out: &mut String, r: &Report, window: Option<(f64, f64)>) {
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
