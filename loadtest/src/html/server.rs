//! The server section.

use super::blocks::{figure, pairs, per_second, pinned};
use super::{line_chart, opt, Series, BLUE, GREEN, GREY, PURPLE};
use crate::report::Report;

/// The server: CPU, memory and scheduling delay over the run.
pub fn server_section(out: &mut String, r: &Report, window: Option<(f64, f64)>) {
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
            (
                "CPU µs per delivered update",
                opt(s.cpu_us_per_delivered_update),
            ),
            (
                "updates delivered a second",
                opt(s.delivered_updates_per_second),
            ),
            ("pinned to CPUs", pinned(&s.pinned_to)),
            (
                "CPUs allowed",
                s.cpus_allowed.clone().unwrap_or_else(|| "n/a".into()),
            ),
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
