//! Sections that tell whether the run and its measure were sound: problems, the
//! generator, the drop and the profile.

use super::blocks::{codes, pairs, pinned};
use super::{num, opt};
use crate::report::Report;

/// Problems: drops, reorderings, unexpected closes and errors.
pub fn problems_section(out: &mut String, r: &Report) {
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
pub fn generator_section(out: &mut String, r: &Report) {
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
            (
                "CPU µs per delivered update",
                opt(g.cpu_us_per_delivered_update),
            ),
            ("busy", g.busy_reason.clone().unwrap_or_else(|| "no".into())),
            (
                "the limit of the run",
                g.generator_limited_reason
                    .clone()
                    .unwrap_or_else(|| "no".into()),
            ),
            ("usable cores", num(g.usable_cores)),
            ("pinned to CPUs", pinned(&g.pinned_to)),
            (
                "CPUs allowed",
                g.cpus_allowed.clone().unwrap_or_else(|| "n/a".into()),
            ),
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
pub fn drop_section(out: &mut String, r: &Report) {
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

/// `--restore-every`: the restores made, and how long each took to be durable.
pub fn restores_section(out: &mut String, r: &Report) {
    if let Some(x) = &r.restores {
        out.push_str("<h2>Restores</h2>\n");
        pairs(
            out,
            &[
                ("one every, s", num(x.every_s)),
                ("restored", x.restored.to_string()),
                ("failed", x.failed.to_string()),
                ("restore p50, ms", num(x.restore_ms.p50)),
                ("restore p99, ms", num(x.restore_ms.p99)),
                ("restore max, ms", num(x.restore_ms.max)),
            ],
        );
    }
}

/// `--server-patches-per-s`: the server API's patches, and how long each took to be durable.
pub fn server_patches_section(out: &mut String, r: &Report) {
    if let Some(x) = &r.server_patches {
        out.push_str("<h2>Server patches</h2>\n");
        pairs(
            out,
            &[
                ("a second, asked", num(x.per_s)),
                ("applied", x.applied.to_string()),
                ("failed", x.failed.to_string()),
                ("skipped (256 waiting)", x.skipped.to_string()),
                ("server patch p50, ms", num(x.latency_ms.p50)),
                ("server patch p90, ms", num(x.latency_ms.p90)),
                ("server patch p99, ms", num(x.latency_ms.p99)),
                ("server patch max, ms", num(x.latency_ms.max)),
            ],
        );
    }
}

/// The CPU profile, when asked for.
pub fn profile_section(out: &mut String, r: &Report) {
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
