//! The report as text: the fleet, the fault, the drop.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::{opt, Report};

impl Report {
    /// The fleet, in cluster mode.
    pub(super) fn text_cluster(&self, w: &mut String) {
        if let Some(c) = &self.cluster {
            let behind = match c.routers.len() {
                0 | 1 => format!("the router at {}", c.router),
                n => format!(
                    "{n} routers at {} (clients spread over them in turn)",
                    c.routers.join(", ")
                ),
            };
            let _ = writeln!(
                w,
                "\nCluster: {} nodes behind {behind} ({}); the server measures above are the \
                 {}router's",
                c.nodes.len(),
                c.services,
                if c.routers.len() > 1 { "first " } else { "" }
            );
            let _ = writeln!(w, "  rooms at the end: {}", counts(&c.rooms_at_end));
        }
    }

    /// The fault and the recovery, in a fault run.
    pub(super) fn text_restores(&self, w: &mut String) {
        if let Some(x) = &self.restores {
            let _ = writeln!(
                w,
                "\nRestores (one every {} s): {} made, {} failed; durable and answered in p50 {} ms, \
                 p99 {} ms, max {} ms (relay latency and version gaps above include them)",
                x.every_s, x.restored, x.failed, x.restore_ms.p50, x.restore_ms.p99, x.restore_ms.max
            );
            for e in &x.errors {
                let _ = writeln!(w, "  {e}");
            }
        }
    }

    /// `--server-patches-per-s`: how many, and how long each took to be durable.
    pub(super) fn text_server_patches(&self, w: &mut String) {
        if let Some(x) = &self.server_patches {
            let l = &x.latency_ms;
            let _ = writeln!(
                w,
                "\nServer patches ({} a second): {} applied, {} failed, {} skipped; durable and \
                 answered in p50 {} ms, p90 {} ms, p99 {} ms, max {} ms",
                x.per_s, x.applied, x.failed, x.skipped, l.p50, l.p90, l.p99, l.max
            );
            for e in &x.errors {
                let _ = writeln!(w, "  {e}");
            }
        }
    }

    pub(super) fn text_failover(&self, w: &mut String) {
        if let Some(f) = &self.failover {
            let _ = writeln!(
                w,
                "\nFault {}: {} ({} rooms) at {:.2} s, undone after {:.0} ms",
                f.fault, f.target, f.killed_node_rooms, f.killed_at_s, f.fault_lasted_ms
            );
            for step in &f.steps {
                let _ = writeln!(w, "  {step}");
            }
            if !f.woken_room_exits.is_empty() {
                let _ = writeln!(
                    w,
                    "  the woken node's rooms ended: {}",
                    counts(&f.woken_room_exits)
                );
            }
            let _ = writeln!(
                w,
                "  every file served again after {} | longest outage of a file {:.0} ms ({} files \
                 interrupted) | sockets back after {} | reconnects {} (failed attempts {}) | \
                 patches resent {}",
                opt(f.recover_ms, " ms"),
                f.longest_outage_ms,
                f.files_interrupted,
                opt(f.clients_back_ms, " ms"),
                f.reconnects,
                f.reconnect_failures,
                f.resent_patches
            );
            for r in &f.routers {
                let _ = writeln!(
                    w,
                    "  through {} alone: every file served again after {} | longest outage of a \
                     file {:.0} ms ({} files interrupted)",
                    r.router,
                    opt(r.recover_ms, " ms"),
                    r.longest_outage_ms,
                    r.files_interrupted
                );
            }
            if f.router_switches > 0 {
                let _ = writeln!(
                    w,
                    "  joins sent to the next router (one could not be reached): {}",
                    f.router_switches
                );
            }
            if let Some(s) = &f.stale {
                let _ = writeln!(
                    w,
                    "  the dead node's {} files served again, from the kill: through {} (cut from \
                     the coordinator) after {}, through the other routers after {}",
                    s.dead_node_files,
                    s.stale_router,
                    opt(s.stale_router_ms, " ms"),
                    opt(s.healthy_router_ms, " ms")
                );
            }
            let _ = writeln!(
                w,
                "  acked patches lost {} of {} | clients not converged {} of {} | files unreadable {}",
                f.acked_lost, f.acked_checked, f.not_converged, f.clients_checked, f.files_unreadable
            );
            let h = &f.history;
            let _ = writeln!(
                w,
                "  history: {} versions given to {} clients ({} distinct), violations {}{}{}",
                h.versions_checked,
                h.clients,
                h.versions_distinct,
                h.violations,
                h.first_violation
                    .as_ref()
                    .map(|v| format!(" (first: {v})"))
                    .unwrap_or_default(),
                if h.clients_truncated > 0 {
                    format!(", {} client logs cut at their bound", h.clients_truncated)
                } else {
                    String::new()
                }
            );
        }
    }

    /// The drop at the end, when asked for.
    pub(super) fn text_drop(&self, w: &mut String) {
        if let Some(d) = &self.drop {
            let _ = writeln!(w, "\nDrop (every socket at once, no close handshake)");
            let _ = writeln!(
                w,
                "  server up: {} | /health answered after {} | connections at 0 after {}",
                if d.server_up { "yes" } else { "NO" },
                opt(d.health_after_ms, " ms"),
                opt(d.connections_zero_after_ms, " ms"),
            );
        }
    }
}

/// Counts by name as `name count, name count`.
fn counts(map: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = map.iter().map(|(k, n)| format!("{k} {n}")).collect();
    parts.join(", ")
}
