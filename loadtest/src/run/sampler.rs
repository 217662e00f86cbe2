//! The sampler: every second, the server's CPU and memory and the counters' rates.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{is_cluster, look};
use crate::http::Endpoint;
use crate::measure::{self, round3, Measures};
use crate::options::Options;
use crate::report::{self, MemoryPoint, Second};

/// What the sampler collects.
#[derive(Default)]
pub struct Collected {
    pub phase: &'static str,
    pub seconds: Vec<Second>,
    pub memory: Vec<MemoryPoint>,
    pub window_sched_p99: Option<f64>,
    pub max_rss: Option<u64>,
}

pub fn set_phase(c: &Mutex<Collected>, phase: &'static str) {
    c.lock().unwrap_or_else(|e| e.into_inner()).phase = phase;
}

/// Looks at the server and the counters every second until `stop`.
pub async fn sampler(
    m: Arc<Measures>,
    endpoint: Endpoint,
    pid: Option<u32>,
    collected: Arc<Mutex<Collected>>,
    stop: Arc<AtomicBool>,
    o: Options,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tick.tick().await;
    let mut last = (Instant::now(), m.snapshot(), None::<f64>);
    let mut own_last = measure::own_cpu_seconds();
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let s = look(&endpoint, pid, is_cluster(&o)).await;
        let (now, snap) = (Instant::now(), m.snapshot());
        let secs = now.duration_since(last.0).as_secs_f64();
        let r = last.1.rates(&snap, secs);
        let cpu = match (last.2, s.cpu_seconds) {
            (Some(a), Some(b)) if secs > 0.0 => Some(round3((b - a) / secs * 100.0)),
            _ => None,
        };
        let own = measure::own_cpu_seconds();
        let own_cpu = match (own_last, own) {
            (Some(a), Some(b)) if secs > 0.0 => Some(round3((b - a) / secs * 100.0)),
            _ => None,
        };
        own_last = own;
        let (relay, ack, presence) = (
            Measures::take_second(&m.relay),
            Measures::take_second(&m.ack),
            Measures::take_second(&m.presence),
        );
        let mut c = collected.lock().unwrap_or_else(|e| e.into_inner());
        let t_s = round3(m.elapsed().as_secs_f64());
        let row = Second {
            t_s,
            phase: c.phase.to_string(),
            open: m.counters.open.load(Ordering::Relaxed),
            patches_sent: r[0],
            patches_received: r[2],
            presence_sent: r[3],
            presence_received: r[4],
            mb_received: round3(r[7] / 1e6),
            relay_p50_ms: relay.p50,
            relay_p99_ms: relay.p99,
            ack_p50_ms: ack.p50,
            ack_p99_ms: ack.p99,
            presence_p50_ms: presence.p50,
            presence_p99_ms: presence.p99,
            generator_delay_p99_ms: Measures::take_second(&m.generator_delay).p99,
            server_cpu_percent: cpu,
            generator_cpu_percent: own_cpu,
            server_rss_mb: s.rss_bytes.map(report::mb),
            server_up: s.up,
        };
        if c.phase == "measure" {
            if let Some(st) = &s.stats {
                let worst = c.window_sched_p99.unwrap_or(0.0);
                c.window_sched_p99 = Some(worst.max(st.scheduling_delay_p99_ms));
            }
        }
        c.max_rss = c.max_rss.max(s.rss_bytes).max(s.peak_rss_bytes);
        c.memory.push(MemoryPoint {
            t_s,
            rss_mb: s.rss_bytes.map(report::mb),
            connections: s.stats.as_ref().map(|st| st.connections),
        });
        if o.verbose {
            eprintln!(
                "{t_s:>6.0}s {:<8} open {:>6} | patches {:>6.0}/s out {:>7.0}/s in | presence \
                 {:>7.0}/s out {:>7.0}/s in | p99 relay {:>7.1} ack {:>7.1} presence {:>7.1} ms | \
                 server CPU {:>5} rss {:>7} | gen delay p99 {:.1} ms",
                row.phase,
                row.open,
                row.patches_sent,
                row.patches_received,
                row.presence_sent,
                row.presence_received,
                row.relay_p99_ms,
                row.ack_p99_ms,
                row.presence_p99_ms,
                cpu.map_or("n/a".into(), |c| format!("{c:.0}%")),
                row.server_rss_mb
                    .map_or("n/a".into(), |r| format!("{r:.0}MB")),
                row.generator_delay_p99_ms,
            );
        }
        c.seconds.push(row);
        drop(c);
        last = (now, snap, s.cpu_seconds.or(last.2));
    }
}
