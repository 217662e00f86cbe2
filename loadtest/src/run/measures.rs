//! The report's measures computed from counters and samples: rates, problems, the server.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::measure::{from_counters, round3, Measures};
use crate::node::Sample;
use crate::options::Options;
use crate::report::{self, Expected, Problems, Rates, Report};
use crate::setup::ClientPlan;

/// What the schedules ask for, a second: patches sent, presence sent, patches relayed.
pub fn expected(plans: &[ClientPlan], o: &Options) -> Expected {
    let mut people: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for p in plans {
        let e = people.entry(p.file).or_default();
        e.0 += 1.0;
        e.1 += f64::from(u8::from(p.editor));
    }
    let editors: f64 = people.values().map(|(_, e)| e).sum();
    let relays: f64 = people.values().map(|(n, e)| e * (n - 1.0)).sum();
    Expected {
        patches_sent_per_s: editors * o.edit_rate,
        presence_sent_per_s: plans.len() as f64 * o.presence_rate,
        patches_received_per_s: relays * o.edit_rate,
    }
}

/// The counters' rates over the window, in the order `Snapshot::rates` gives them.
pub fn rates(rates: &[f64]) -> Rates {
    Rates {
        patches_sent_per_s: round3(rates[0]),
        acks_received_per_s: round3(rates[1]),
        patches_received_per_s: round3(rates[2]),
        presence_sent_per_s: round3(rates[3]),
        presence_received_per_s: round3(rates[4]),
        messages_sent_per_s: round3(rates[5]),
        messages_received_per_s: round3(rates[6]),
        mb_received_per_s: round3(rates[7] / 1e6),
    }
}

pub fn problems(m: &Measures) -> Problems {
    let map =
        |x: &Mutex<BTreeMap<String, u64>>| x.lock().unwrap_or_else(|e| e.into_inner()).clone();
    from_counters!(
        Problems,
        m.counters,
        [
            dropped_patches,
            out_of_order,
            unacked_patches,
            connection_errors,
            handshake_resets,
            rate_limited,
            rejected,
            joined_as_viewer,
            sends_skipped,
        ],
        unexpected_closes: map(&m.unexpected_closes),
        rejects: map(&m.rejects),
        notices: map(&m.notices),
    )
}

/// What the generator counted over the window.
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    /// Messages it sent and received.
    pub messages: u64,
    /// Patches and presence entries its clients received from someone else.
    pub delivered: u64,
}

/// Server CPU, messages and memory over the window, from two samples.
pub fn server_measures(
    r: &mut Report,
    before: &Sample,
    s0: &Sample,
    s1: &Sample,
    window_s: f64,
    counted: Counted,
    open: u64,
) {
    let s = &mut r.server;
    let cpu = match (s0.cpu_seconds, s1.cpu_seconds) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    s.cpu_cores = cpu.map(|c| round3(c / window_s));
    s.cpu_percent = cpu.map(|c| round3(c / window_s * 100.0));
    let (messages, by) = match (&s0.stats, &s1.stats) {
        (Some(a), Some(b)) => {
            let inn = b.messages_in.saturating_sub(a.messages_in);
            let out = b.messages_out.saturating_sub(a.messages_out);
            s.messages_in_per_s = Some(round3(inn as f64 / window_s));
            s.messages_out_per_s = Some(round3(out as f64 / window_s));
            (inn + out, "health")
        }
        _ => (counted.messages, "generator"),
    };
    s.messages_counted_by = by.to_string();
    s.cpu_us_per_message = cpu.and_then(|c| report::cpu_us_per(c, messages));
    s.cpu_us_per_delivered_update = cpu.and_then(|c| report::cpu_us_per(c, counted.delivered));
    s.delivered_updates_per_second = Some(round3(counted.delivered as f64 / window_s));
    s.rss_before_mb = before.rss_bytes.map(report::mb);
    s.rss_end_mb = s1.rss_bytes.map(report::mb);
    if let (Some(a), Some(b)) = (before.rss_bytes, s1.rss_bytes) {
        s.kb_per_connection = report::kb_per_connection(a, b, open);
    }
    s.connections = s1.stats.as_ref().map(|st| st.connections);
    s.rooms = s1.stats.as_ref().map(|st| st.rooms);
    s.people = s1.stats.as_ref().map(|st| st.people);
    s.editors = s1.stats.as_ref().map(|st| st.editors);
}
