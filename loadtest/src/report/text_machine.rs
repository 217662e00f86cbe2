//! The report as text: the server, the generator and the machine, the profile.

use std::fmt::Write;

use super::{opt, Report};

/// Where a process ran: pinned or not, and the CPUs the kernel lets it use.
fn cpus(pinned: &Option<String>, allowed: &Option<String>) -> String {
    let allowed = allowed.as_deref().unwrap_or("unknown");
    match pinned {
        Some(p) => format!("pinned to CPUs {p} (allowed: {allowed})"),
        None => format!("not pinned (CPUs {allowed})"),
    }
}

impl Report {
    /// The server's CPU, memory and scheduling delay.
    pub(super) fn text_server(&self, w: &mut String) {
        let s = &self.server;
        let _ = writeln!(w, "\nServer");
        let _ = writeln!(
            w,
            "  CPU {} of a core | {} µs per message in+out (messages counted by {}: {} in/s, {} out/s)",
            opt(s.cpu_percent, "%"),
            opt(s.cpu_us_per_message, ""),
            s.messages_counted_by,
            opt(s.messages_in_per_s, ""),
            opt(s.messages_out_per_s, ""),
        );
        let _ = writeln!(
            w,
            "  {} µs per delivered update ({} updates delivered a second) | {}",
            opt(s.cpu_us_per_delivered_update, ""),
            opt(s.delivered_updates_per_second, ""),
            cpus(&s.pinned_to, &s.cpus_allowed),
        );
        let _ = writeln!(
            w,
            "  memory: peak {} | before sockets {} | end {} | {} per connection",
            opt(s.max_rss_mb, " MB"),
            opt(s.rss_before_mb, " MB"),
            opt(s.rss_end_mb, " MB"),
            opt(s.kb_per_connection, " KB"),
        );
        let _ = writeln!(
            w,
            "  scheduling delay p99 {} (worst 10-s window)",
            opt(s.sched_delay_p99_ms, " ms")
        );
    }

    /// The generator and the machine.
    pub(super) fn text_generator(&self, w: &mut String) {
        let g = &self.generator;
        let _ = writeln!(w, "\nGenerator ({} threads)", g.workers);
        let _ = writeln!(
            w,
            "  scheduling delay p50 {:.1} p99 {:.1} max {:.1} ms | CPU {} of a core, {} µs per message",
            g.sched_delay_ms.p50,
            g.sched_delay_p99_ms,
            g.sched_delay_max_ms,
            opt(g.cpu_cores.map(|c| c * 100.0), "%"),
            opt(g.cpu_us_per_message, ""),
        );
        let _ = writeln!(
            w,
            "  {} µs per delivered update ({:.0} a second) | {}",
            opt(g.cpu_us_per_delivered_update, ""),
            g.delivered_updates_per_second,
            cpus(&g.pinned_to, &g.cpus_allowed),
        );
        if let Some(reason) = &g.busy_reason {
            let _ = writeln!(w, "  WARNING: {reason}");
        }
        if let Some(reason) = &g.generator_limited_reason {
            let _ = writeln!(
                w,
                "  WARNING: the generator, not the server, was the limit: {reason}; the server's \
                 figures are for the load the generator could offer, not the server's most"
            );
        }
        let _ = writeln!(
            w,
            "\nMachine: {} cores, {} busy over the window, {} of it neither server nor generator",
            self.machine.cores,
            opt(self.machine.busy_cores, " cores"),
            opt(self.machine.other_cores, " cores"),
        );
    }

    /// The CPU profile, when one was taken.
    pub(super) fn text_profile(&self, w: &mut String) {
        if let Some(p) = &self.profile {
            let _ = writeln!(
                w,
                "\nProfile (the node's CPU over the window, perf at {} Hz, {} stacks)",
                p.frequency_hz, p.call_graph
            );
            match (&p.flamegraph_svg, &p.error) {
                (Some(svg), None) => {
                    let _ = writeln!(
                        w,
                        "  {} samples, {} stacks over {:.1} s | flame graph {} | raw {}",
                        p.samples,
                        p.stacks,
                        p.recorded_s,
                        svg.display(),
                        p.perf_data
                            .as_ref()
                            .map_or(String::new(), |d| d.display().to_string()),
                    );
                }
                (_, Some(e)) => {
                    let _ = writeln!(w, "  FAILED: {e}");
                }
                _ => {}
            }
        }
    }
}
