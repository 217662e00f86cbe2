//! The report, assembled from what the run saw.

use super::measures::{expected, problems, rates, server_measures, Counted};
use super::sampler::Collected;
use super::window::Window;
use crate::measure::{round3, Measures, Summary};
use crate::node::Sample;
use crate::options::Options;
use crate::pin::{self, CpuList};
use crate::profile::{self, ProfileReport};
use crate::report::{self, ClusterInfo, DropResult, Failover, Report};
use crate::setup::ClientPlan;

/// Everything the run saw, for its report.
pub struct Ran {
    pub(super) target: String,
    pub(super) plans: Vec<ClientPlan>,
    pub(super) connected: u64,
    pub(super) connect_s: f64,
    /// The server before any socket opened.
    pub(super) before: Sample,
    pub(super) drop: Option<DropResult>,
    pub(super) failover: Option<Failover>,
    pub(super) cluster: Option<ClusterInfo>,
    pub(super) pid: Option<u32>,
}

impl Ran {
    /// The report of the run, with what its measured window and its sampler saw.
    pub fn report(self, o: &Options, m: &Measures, w: &Window, collected: Collected) -> Report {
        let window_s = w.seconds;
        let (c0, c1) = &w.counters;
        let mut r = Report {
            label: o.label.clone(),
            date_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            target: self.target,
            users: o.users,
            files: o.files,
            pages: o.pages,
            editors: self.plans.iter().filter(|p| p.editor).count(),
            edit_rate: o.edit_rate,
            presence_rate: o.presence_rate,
            warmup_s: o.warmup,
            duration_s: round3(window_s),
            connected: self.connected,
            connect_s: round3(self.connect_s),
            storm: o.storm,
            patch_relay_ms: Measures::total(&m.relay),
            patch_ack_ms: Measures::total(&m.ack),
            presence_ms: Measures::total(&m.presence),
            expected: expected(&self.plans, o),
            problems: problems(m),
            memory: collected.memory,
            seconds: collected.seconds,
            drop: self.drop,
            failover: self.failover,
            cluster: self.cluster,
            rates: rates(&c0.rates(c1, window_s)),
            ..Default::default()
        };
        if let (Some(dir), Some(recorded)) = (&o.profile, &w.recorded) {
            r.profile = Some(ProfileReport {
                dir: dir.clone(),
                frequency_hz: profile::FREQUENCY_HZ,
                call_graph: o.profile_call_graph.clone(),
                recorded_s: *recorded.as_ref().unwrap_or(&0.0),
                error: recorded.as_ref().err().map(|e| format!("{e:#}")),
                ..Default::default()
            });
        }
        let counted = Counted {
            messages: (c1.messages_sent + c1.messages_received)
                .saturating_sub(c0.messages_sent + c0.messages_received),
            delivered: c1.delivered_updates.saturating_sub(c0.delivered_updates),
        };
        let (s0, s1) = &w.server;
        server_measures(
            &mut r,
            &self.before,
            s0,
            s1,
            window_s,
            counted,
            w.open_at_end,
        );
        r.server.pid = self.pid;
        r.server.pinned_to = o.pin_server.as_ref().map(ToString::to_string);
        r.server.cpus_allowed = self.pid.and_then(pin::allowed_for);
        r.server.sched_delay_p99_ms = collected.window_sched_p99;
        r.server.max_rss_mb = collected.max_rss.max(s1.peak_rss_bytes).map(report::mb);
        generator_and_machine(&mut r, o, m, w, counted);
        r
    }
}

/// The generator's own measures and the machine's: was the measure itself sound?
fn generator_and_machine(r: &mut Report, o: &Options, m: &Measures, w: &Window, counted: Counted) {
    let window_s = w.seconds;
    let (c0, c1) = &w.counters;
    let delay: Summary = Measures::total(&m.generator_delay);
    r.generator.workers = o.workers;
    r.generator.sched_delay_ms = delay;
    r.generator.sched_delay_p99_ms = delay.p99;
    r.generator.sched_delay_max_ms = delay.max;
    if let (Some(a), Some(b)) = w.own_cpu {
        r.generator.cpu_cores = Some(round3((b - a) / window_s));
        r.generator.cpu_us_per_message = report::cpu_us_per(b - a, counted.messages);
        r.generator.cpu_us_per_delivered_update = report::cpu_us_per(b - a, counted.delivered);
    }
    r.generator.delivered_updates_per_second = round3(counted.delivered as f64 / window_s);
    r.generator.pinned_to = o.pin_generator.as_ref().map(ToString::to_string);
    r.generator.cpus_allowed = pin::allowed_for(std::process::id());
    r.machine.cores = machine_cores();
    if let (Some(a), Some(b)) = w.machine_cpu {
        let busy = (b - a) / window_s;
        r.machine.busy_cores = Some(round3(busy));
        if let (Some(srv), Some(generator)) = (r.server.cpu_cores, r.generator.cpu_cores) {
            r.machine.other_cores = Some(round3((busy - srv - generator).max(0.0)));
        }
    }
    let sent = c1.messages_sent - c0.messages_sent;
    r.generator.busy_reason = report::busy(delay.p99, c1.sends_skipped - c0.sends_skipped, sent);
    r.generator.busy_warning = r.generator.busy_reason.is_some();
    r.generator.usable_cores = usable_cores(o);
    r.generator.generator_limited_reason =
        report::limited(r.generator.cpu_cores, r.generator.usable_cores, delay.p99);
    r.generator.generator_limited = r.generator.generator_limited_reason.is_some();
}

/// The cores the tool was started with: once the generator is pinned, the standard library's
/// count would be its own CPUs, not the machine's.
fn machine_cores() -> usize {
    pin::started_on().map_or_else(
        || std::thread::available_parallelism().map_or(0, |n| n.get()),
        CpuList::count,
    )
}

/// The cores the generator may use: its runtime's threads, at most the CPUs it may run on.
fn usable_cores(o: &Options) -> f64 {
    let cpus = o
        .pin_generator
        .as_ref()
        .or(pin::started_on())
        .map_or_else(machine_cores, CpuList::count);
    o.workers.min(cpus) as f64
}
