//! The measured window: the counters, the server and the machine looked at on both sides of
//! it, the fault struck inside it, and the profile recorded over it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::failover::{strike, Struck};
use super::{look, progress};
use crate::cluster::Cluster;
use crate::http::Endpoint;
use crate::measure::{self, Measures, Snapshot};
use crate::node::Sample;
use crate::options::Options;
use crate::profile;
use crate::setup::FileKeys;

/// What was seen at the start and the end of the window.
pub struct Window {
    /// The server at the start and at the end.
    pub server: (Sample, Sample),
    /// The generator's counters at the start and at the end.
    pub counters: (Snapshot, Snapshot),
    /// The generator's own CPU seconds at the start and at the end.
    pub own_cpu: (Option<f64>, Option<f64>),
    /// The whole machine's busy CPU seconds at the start and at the end.
    pub machine_cpu: (Option<f64>, Option<f64>),
    pub seconds: f64,
    /// The profile's recorded seconds, when one was asked for and the node's pid is known.
    pub recorded: Option<Result<f64>>,
    pub fault: Option<Struck>,
    /// Sockets open when the window closed.
    pub open_at_end: u64,
}

/// The target seen from inside the run: where it answers, the process measured, and the
/// cluster when the run started one.
pub struct Target<'a> {
    pub endpoint: &'a Endpoint,
    pub pid: Option<u32>,
    pub cluster: &'a mut Option<Cluster>,
}

/// How long the window goes on at least once a fault is undone: time for the fleet to serve
/// every file again even when undoing it took long (a NATS cluster electing its leaders on a
/// loaded machine), so a slow undoing is not read as files never served again.
const AFTER_FAULT: Duration = Duration::from_secs(5);

/// Runs the measured window: `o.duration` seconds, the fault struck at its time, and at least
/// [`AFTER_FAULT`] after the fault was undone.
pub async fn measure(
    o: &Options,
    t: &mut Target<'_>,
    m: &Measures,
    files: &[FileKeys],
) -> Result<Window> {
    let (endpoint, pid, in_cluster) = (t.endpoint, t.pid, t.cluster.is_some());
    let recorder = match (&o.profile, pid) {
        (Some(dir), Some(pid)) => Some(
            profile::Recorder::start(&profile::perf_binary(), pid, dir, &o.profile_call_graph)
                .context("--profile")?,
        ),
        _ => None,
    };
    let s0 = look(endpoint, pid, in_cluster).await;
    let (c0, g0, t0) = (m.snapshot(), measure::own_cpu_seconds(), Instant::now());
    let busy0 = measure::machine_cpu_seconds();
    m.set_measuring(true);
    let window_start = tokio::time::Instant::now();
    let mut window_end = window_start + Duration::from_secs_f64(o.duration);
    let mut fault_at = o
        .fault
        .map(|f| window_start + Duration::from_secs_f64(f.at));
    let mut fault: Option<Struck> = None;
    while tokio::time::Instant::now() < window_end {
        if let (Some(at), Some(c), Some(f)) = (fault_at, t.cluster.as_mut(), o.fault) {
            if tokio::time::Instant::now() >= at {
                fault_at = None;
                fault = Some(strike(o, f, c, files, window_start).await?);
                window_end = window_end.max(tokio::time::Instant::now() + AFTER_FAULT);
            }
        }
        let left = window_end - tokio::time::Instant::now();
        let left = match fault_at {
            Some(at) => left.min(at.saturating_duration_since(tokio::time::Instant::now())),
            None => left,
        };
        progress(
            o,
            &format!(
                "measuring: {:.0} s left, {} open",
                left.as_secs_f64(),
                m.counters.open.load(Ordering::Relaxed)
            ),
        );
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
    }
    m.set_measuring(false);
    if let Some(struck) = &fault {
        struck.stop_probe();
    }
    let (c1, g1, window) = (m.snapshot(), measure::own_cpu_seconds(), t0.elapsed());
    let busy1 = measure::machine_cpu_seconds();
    let s1 = look(endpoint, pid, in_cluster).await;
    let recorded = match recorder {
        Some(rec) => Some(tokio::task::spawn_blocking(move || rec.stop()).await?),
        None => None,
    };
    Ok(Window {
        server: (s0, s1),
        counters: (c0, c1),
        own_cpu: (g0, g1),
        machine_cpu: (busy0, busy1),
        seconds: window.as_secs_f64(),
        recorded,
        fault,
        open_at_end: m.counters.open.load(Ordering::Relaxed),
    })
}
