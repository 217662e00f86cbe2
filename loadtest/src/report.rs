//! The report: what a run measured, as JSON (names other tools rely on) and as text.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::measure::{round3, Summary};
use crate::profile::ProfileReport;

/// Generator scheduling delay (p99, ms) above which its latencies are suspect.
pub const BUSY_DELAY_P99_MS: f64 = 20.0;
/// Share of scheduled sends skipped above which the offered load was not delivered.
pub const BUSY_SKIPPED_SHARE: f64 = 0.01;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub label: String,
    pub date_unix_s: u64,
    pub target: String,
    pub users: usize,
    pub files: usize,
    pub pages: usize,
    /// Clients that asked to edit.
    pub editors: usize,
    pub edit_rate: f64,
    pub presence_rate: f64,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub connected: u64,
    pub connect_s: f64,
    /// Every socket connected at once (`--storm`).
    pub storm: bool,
    pub patch_relay_ms: Summary,
    pub patch_ack_ms: Summary,
    pub presence_ms: Summary,
    pub rates: Rates,
    pub expected: Expected,
    pub problems: Problems,
    pub server: Server,
    pub generator: Generator,
    pub drop: Option<DropResult>,
    /// `--spawn-cluster`: the fleet that ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    /// `--kill-node`: what the kill cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<Failover>,
    pub machine: Machine,
    /// `--profile`: where the node's CPU profile went.
    pub profile: Option<ProfileReport>,
    /// Server memory every second, the whole run.
    pub memory: Vec<MemoryPoint>,
    /// One row a second, the whole run.
    pub seconds: Vec<Second>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Rates {
    pub patches_sent_per_s: f64,
    pub acks_received_per_s: f64,
    pub patches_received_per_s: f64,
    pub presence_sent_per_s: f64,
    pub presence_received_per_s: f64,
    pub messages_sent_per_s: f64,
    pub messages_received_per_s: f64,
    pub mb_received_per_s: f64,
}

/// What the schedules asked for, to compare with what was sent.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Expected {
    pub patches_sent_per_s: f64,
    pub presence_sent_per_s: f64,
    /// Every patch reaches everyone else in its file.
    pub patches_received_per_s: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Problems {
    pub dropped_patches: u64,
    pub out_of_order: u64,
    pub unacked_patches: u64,
    pub unexpected_closes: BTreeMap<String, u64>,
    pub connection_errors: u64,
    /// Joins reset, or ended with no close frame, between the TCP connect and the welcome.
    pub handshake_resets: u64,
    pub rate_limited: u64,
    pub rejected: u64,
    pub rejects: BTreeMap<String, u64>,
    pub notices: BTreeMap<String, u64>,
    pub joined_as_viewer: u64,
    pub sends_skipped: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Server {
    pub pid: Option<u32>,
    pub cpu_cores: Option<f64>,
    pub cpu_percent: Option<f64>,
    pub cpu_us_per_message: Option<f64>,
    pub messages_in_per_s: Option<f64>,
    pub messages_out_per_s: Option<f64>,
    /// `health` (the node's counters) or `generator` (our own counts).
    pub messages_counted_by: String,
    pub max_rss_mb: Option<f64>,
    pub rss_before_mb: Option<f64>,
    pub rss_end_mb: Option<f64>,
    pub kb_per_connection: Option<f64>,
    pub sched_delay_p99_ms: Option<f64>,
    pub connections: Option<u64>,
    pub rooms: Option<u64>,
    pub people: Option<u64>,
    pub editors: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Generator {
    pub workers: usize,
    pub sched_delay_ms: Summary,
    pub sched_delay_p99_ms: f64,
    pub sched_delay_max_ms: f64,
    pub cpu_cores: Option<f64>,
    pub cpu_us_per_message: Option<f64>,
    pub busy_warning: bool,
    pub busy_reason: Option<String>,
}

/// The whole machine over the window: what the server and generator used, and everything else.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub busy_cores: Option<f64>,
    /// Busy CPU that was neither the server's nor the generator's (other processes, the kernel's
    /// softirq work on behalf of loopback traffic is partly here).
    pub other_cores: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct DropResult {
    pub server_up: bool,
    pub health_after_ms: Option<f64>,
    pub connections_zero_after_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ClusterInfo {
    /// Node ids and their addresses.
    pub nodes: BTreeMap<String, String>,
    pub router: String,
    pub router_pid: Option<u32>,
    /// Where Postgres and the coordinator came from.
    pub services: String,
    pub coordinator: String,
    /// Each node's rooms (`/health` `stats.rooms`) at the end of the window.
    pub rooms_at_end: BTreeMap<String, u64>,
}

/// `--fault` (or `--kill-node`): what the fault cost. The `killed_*` names are kept from
/// `--kill-node` for every kind of fault.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Failover {
    /// `kill`, `pause`, `rolling`, `coordinator`, `store` or `router`.
    pub fault: String,
    /// Seconds into the measured window when the fault struck.
    pub killed_at_s: f64,
    /// What was broken: a node id, the nodes in turn, `nats-server`, `postgres` or `router`
    /// (`killed_node` is the same, by its `--kill-node` name).
    pub target: String,
    pub killed_node: String,
    /// Rooms the target node held (its `/health` `stats.rooms`) when it was chosen.
    pub killed_node_rooms: u64,
    /// Every node's rooms when the fault struck.
    pub rooms_by_node: BTreeMap<String, u64>,
    /// From the fault striking until it was undone (0 for a kill).
    pub fault_lasted_ms: f64,
    /// What was done, step by step.
    pub steps: Vec<String>,
    /// `pause`: the woken node's rooms that ended after it woke, by reason.
    pub woken_room_exits: BTreeMap<String, u64>,
    /// From the fault striking until `GET /api/files/{id}/doc` through the router had answered
    /// 200 for every file after the fault was undone; None if some file never did.
    pub recover_ms: Option<f64>,
    /// The longest time one file went without a 200 from the probe (every file every 100 ms).
    pub longest_outage_ms: f64,
    /// Files with at least one failed probe answer.
    pub files_interrupted: u64,
    /// From the fault striking until the last socket that reconnected had its welcome.
    pub clients_back_ms: Option<f64>,
    /// Acked patches whose mark is missing from the final document.
    pub acked_lost: u64,
    /// Clients whose document differs from `GET /api/files/{id}/doc` at the end.
    pub not_converged: u64,
    /// Acked patches checked, and clients compared.
    pub acked_checked: u64,
    pub clients_checked: u64,
    /// Files whose final document could not be fetched (their clients and patches count as
    /// not converged and lost).
    pub files_unreadable: u64,
    /// Clients whose socket was not open when the run ended.
    pub clients_disconnected_at_end: u64,
    /// Clients that had not finished 10 s after the run told them to close.
    pub clients_unfinished: u64,
    pub reconnects: u64,
    pub reconnect_failures: u64,
    /// First joins refused with a close asking to come back (4009 while rooms settle), retried.
    pub join_retries: u64,
    pub resent_patches: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct MemoryPoint {
    pub t_s: f64,
    pub rss_mb: Option<f64>,
    pub connections: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Second {
    pub t_s: f64,
    pub phase: String,
    pub open: u64,
    pub patches_sent: f64,
    pub patches_received: f64,
    pub presence_sent: f64,
    pub presence_received: f64,
    pub mb_received: f64,
    pub relay_p50_ms: f64,
    pub relay_p99_ms: f64,
    pub ack_p50_ms: f64,
    pub ack_p99_ms: f64,
    pub presence_p50_ms: f64,
    pub presence_p99_ms: f64,
    pub generator_delay_p99_ms: f64,
    pub server_cpu_percent: Option<f64>,
    /// This tool's own CPU in the second, % of a core.
    pub generator_cpu_percent: Option<f64>,
    pub server_rss_mb: Option<f64>,
    pub server_up: bool,
}

/// CPU µs per message: CPU seconds over the window ÷ messages handled in it.
pub fn cpu_us_per_message(cpu_seconds: f64, messages: u64) -> Option<f64> {
    (messages > 0).then(|| round3(cpu_seconds * 1e6 / messages as f64))
}

/// Memory per connection in KB: the rise of resident memory ÷ connections.
pub fn kb_per_connection(before: u64, after: u64, connections: u64) -> Option<f64> {
    (connections > 0)
        .then(|| round3(after.saturating_sub(before) as f64 / 1024.0 / connections as f64))
}

pub fn mb(bytes: u64) -> f64 {
    round3(bytes as f64 / (1024.0 * 1024.0))
}

/// Whether the generator was too busy for its numbers to be the server's alone, and why.
pub fn busy(delay_p99_ms: f64, skipped: u64, sent: u64) -> Option<String> {
    if delay_p99_ms > BUSY_DELAY_P99_MS {
        return Some(format!(
            "the generator's scheduling delay p99 was {delay_p99_ms:.1} ms (over \
             {BUSY_DELAY_P99_MS} ms): latencies include the generator's own delay"
        ));
    }
    let scheduled = sent + skipped;
    if scheduled > 0 && skipped as f64 / scheduled as f64 > BUSY_SKIPPED_SHARE {
        return Some(format!(
            "the generator skipped {skipped} of {scheduled} scheduled sends: it could not offer \
             the whole load"
        ));
    }
    None
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.1}{unit}"))
}

fn line(s: &Summary) -> String {
    format!(
        "p50 {:>8.2}  p90 {:>8.2}  p99 {:>8.2}  max {:>9.2} ms  ({} samples)",
        s.p50, s.p90, s.p99, s.max, s.count
    )
}

fn codes(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    parts.join(", ")
}

impl Report {
    /// The readable report.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let w = &mut out;
        self.text_head(w);
        self.text_latency(w);
        self.text_rates(w);
        self.text_problems(w);
        self.text_server(w);
        self.text_generator(w);
        self.text_profile(w);
        self.text_cluster(w);
        self.text_failover(w);
        self.text_drop(w);
        out
    }

    /// The title and the run's shape.
    fn text_head(&self, w: &mut String) {
        let title = if self.label.is_empty() {
            "atrium-loadtest".to_string()
        } else {
            format!("atrium-loadtest: {}", self.label)
        };
        let _ = writeln!(w, "\n== {title} ==");
        let _ = writeln!(
            w,
            "target {} | {} users ({} connected in {:.1} s{}) in {} files of {} pages | {} editors at \
             {}/s | presence {}/s | {} s measured after {} s warm-up",
            self.target,
            self.users,
            self.connected,
            self.connect_s,
            if self.storm { ", all at once" } else { "" },
            self.files,
            self.pages,
            self.editors,
            self.edit_rate,
            self.presence_rate,
            self.duration_s,
            self.warmup_s
        );
    }

    /// Latency percentiles.
    fn text_latency(&self, w: &mut String) {
        let _ = writeln!(w, "\nLatency");
        let _ = writeln!(w, "  patch relay  {}", line(&self.patch_relay_ms));
        let _ = writeln!(w, "  patch ack    {}", line(&self.patch_ack_ms));
        let _ = writeln!(w, "  presence     {}", line(&self.presence_ms));
    }

    /// Rates a second, against what the schedule asked for.
    fn text_rates(&self, w: &mut String) {
        let r = &self.rates;
        let e = &self.expected;
        let _ = writeln!(w, "\nRates (a second)");
        let _ = writeln!(
            w,
            "  patches sent {:.0} (scheduled {:.0}), acked {:.0}, received {:.0} (expected {:.0})",
            r.patches_sent_per_s,
            e.patches_sent_per_s,
            r.acks_received_per_s,
            r.patches_received_per_s,
            e.patches_received_per_s
        );
        let _ = writeln!(
            w,
            "  presence sent {:.0} (scheduled {:.0}), presence messages received {:.0}",
            r.presence_sent_per_s, e.presence_sent_per_s, r.presence_received_per_s
        );
        let _ = writeln!(
            w,
            "  messages sent {:.0}, received {:.0} ({:.2} MB)",
            r.messages_sent_per_s, r.messages_received_per_s, r.mb_received_per_s
        );
    }

    /// Problems: drops, reorderings, closes and errors.
    fn text_problems(&self, w: &mut String) {
        let p = &self.problems;
        let _ = writeln!(w, "\nProblems");
        let _ = writeln!(
            w,
            "  dropped patches {} | out of order {} | unacked at the end {} | sends skipped {}",
            p.dropped_patches, p.out_of_order, p.unacked_patches, p.sends_skipped
        );
        let _ = writeln!(
            w,
            "  unexpected closes: {} | connection errors {} | handshakes reset {}",
            codes(&p.unexpected_closes),
            p.connection_errors,
            p.handshake_resets
        );
        let _ = writeln!(
            w,
            "  rate-limited notices {} | notices: {} | rejects {} ({}) | joined as viewer {}",
            p.rate_limited,
            codes(&p.notices),
            p.rejected,
            codes(&p.rejects),
            p.joined_as_viewer
        );
    }

    /// The server's CPU, memory and scheduling delay.
    fn text_server(&self, w: &mut String) {
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
    fn text_generator(&self, w: &mut String) {
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
        if let Some(reason) = &g.busy_reason {
            let _ = writeln!(w, "  WARNING: {reason}");
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
    fn text_profile(&self, w: &mut String) {
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

    /// The fleet, in cluster mode.
    fn text_cluster(&self, w: &mut String) {
        if let Some(c) = &self.cluster {
            let _ = writeln!(
                w,
                "\nCluster: {} nodes behind the router at {} ({}); the server measures above are \
                 the router's",
                c.nodes.len(),
                c.router,
                c.services
            );
            let rooms: Vec<String> = c
                .rooms_at_end
                .iter()
                .map(|(n, r)| format!("{n} {r}"))
                .collect();
            let _ = writeln!(w, "  rooms at the end: {}", rooms.join(", "));
        }
    }

    /// The fault and the recovery, in a fault run.
    fn text_failover(&self, w: &mut String) {
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
                let exits: Vec<String> = f
                    .woken_room_exits
                    .iter()
                    .map(|(r, n)| format!("{r} {n}"))
                    .collect();
                let _ = writeln!(w, "  the woken node's rooms ended: {}", exits.join(", "));
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
            let _ = writeln!(
                w,
                "  acked patches lost {} of {} | clients not converged {} of {} | files unreadable {}",
                f.acked_lost, f.acked_checked, f.not_converged, f.clients_checked, f.files_unreadable
            );
        }
    }

    /// The drop at the end, when asked for.
    fn text_drop(&self, w: &mut String) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_per_message() {
        assert_eq!(cpu_us_per_message(3.0, 100_000), Some(30.0));
        assert_eq!(cpu_us_per_message(3.0, 0), None);
    }

    #[test]
    fn memory_per_connection() {
        assert_eq!(kb_per_connection(100 << 20, 250 << 20, 1000), Some(153.6));
        assert_eq!(kb_per_connection(100, 50, 10), Some(0.0));
        assert_eq!(kb_per_connection(1, 2, 0), None);
        assert_eq!(mb(3 << 20), 3.0);
    }

    #[test]
    fn busy_generator_is_flagged() {
        assert!(busy(2.0, 0, 1000).is_none());
        assert!(busy(25.0, 0, 1000).unwrap().contains("25.0 ms"));
        assert!(busy(2.0, 50, 950).unwrap().contains("skipped 50 of 1000"));
        assert!(busy(2.0, 5, 995).is_none());
    }

    #[test]
    fn the_json_keeps_the_names_other_tools_read() {
        let r = Report {
            drop: Some(DropResult::default()),
            ..Default::default()
        };
        let v = serde_json::to_value(&r).unwrap();
        for key in [
            "label",
            "users",
            "files",
            "editors",
            "duration_s",
            "patch_relay_ms",
            "patch_ack_ms",
            "presence_ms",
            "rates",
            "problems",
            "server",
            "generator",
            "drop",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        for key in ["p50", "p90", "p99", "max", "count"] {
            assert!(v["patch_relay_ms"].get(key).is_some(), "{key}");
        }
        for key in [
            "patches_sent_per_s",
            "patches_received_per_s",
            "presence_sent_per_s",
            "presence_received_per_s",
            "messages_received_per_s",
            "mb_received_per_s",
        ] {
            assert!(v["rates"].get(key).is_some(), "{key}");
        }
        for key in [
            "dropped_patches",
            "unexpected_closes",
            "connection_errors",
            "handshake_resets",
            "rate_limited",
            "rejected",
            "joined_as_viewer",
        ] {
            assert!(v["problems"].get(key).is_some(), "{key}");
        }
        for key in [
            "cpu_cores",
            "cpu_us_per_message",
            "max_rss_mb",
            "sched_delay_p99_ms",
        ] {
            assert!(v["server"].get(key).is_some(), "{key}");
        }
        for key in ["sched_delay_max_ms", "busy_warning"] {
            assert!(v["generator"].get(key).is_some(), "{key}");
        }
        for key in ["server_up", "health_after_ms"] {
            assert!(v["drop"].get(key).is_some(), "{key}");
        }
        assert!(r.text().contains("patch relay"));
    }
}
