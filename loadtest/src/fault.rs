//! `--fault`: one part of a spawned cluster broken while it is under load, and how long files
//! were not served because of it.
//!
//! The injection runs inline in the measured window (a rolling restart takes seconds); an
//! availability probe asks every file's `GET /api/files/{id}/doc` through every router from
//! the moment the fault strikes until the window ends.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cluster::Cluster;
use crate::http::{self, Endpoint};
use crate::measure::round3;
use crate::node;
use crate::options::{Fault, FaultKind};
use crate::setup::FileKeys;

mod availability;
mod rooms;
mod routers;

pub use availability::{availability, probe, through, through_all, Probed};
use rooms::room_exits;
pub use rooms::rooms_by_node;
pub use routers::{by_router, stale_figures};

/// How often the availability probe asks every file.
const PROBE_EVERY: Duration = Duration::from_millis(100);

/// What was done.
#[derive(Debug, Default)]
pub struct Injection {
    /// Node id, `router`, `nats-server` or `postgres`; for a rolling restart the nodes in turn.
    pub target: String,
    /// Rooms the target node held when it was chosen (0 for a service).
    pub target_rooms: u64,
    pub rooms_by_node: BTreeMap<String, u64>,
    /// From the fault striking until it was undone (the service back, the node woken, the last
    /// restarted node back in the router's ring); 0 for `kill`.
    pub lasted_ms: f64,
    /// What happened, step by step, with times.
    pub steps: Vec<String>,
    /// `pause`: the woken node's rooms that ended after it woke, by reason (its
    /// `atrium_room_exits_total`); the zombie must close them, never write.
    pub woken_room_exits: BTreeMap<String, u64>,
    /// `stale-router`: the router cut from the coordinator (its index).
    pub stale_router: Option<usize>,
    /// `stale-router`: the killed node's files (indices in the run's files).
    pub dead_files: Vec<usize>,
    /// `store-failover*`: how far behind the primary its standby was just before the kill,
    /// in ms (Postgres's `flush_lag`).
    pub standby_lag_ms: Option<f64>,
}

/// Breaks what `fault` names, and undoes it after its hold time (kill and rolling: the
/// kill, or every restart, is the whole fault). `started` is when it struck (for
/// `stale-router`, the node's kill).
pub async fn inject(
    c: &mut Cluster,
    fault: Fault,
    lease_ms: u64,
    files: &[FileKeys],
) -> Result<(Injection, Instant)> {
    let rooms = rooms_by_node(c).await;
    let busiest = rooms
        .iter()
        .max_by_key(|(id, r)| (**r, std::cmp::Reverse((*id).clone())))
        .map(|(id, r)| (id.clone(), *r));
    let mut done = Injection {
        rooms_by_node: rooms,
        ..Default::default()
    };
    let hold = Duration::from_millis(fault.hold_ms.unwrap_or(match fault.kind {
        FaultKind::Pause
        | FaultKind::Partition
        | FaultKind::CutCoordinator
        | FaultKind::CutRouter
        | FaultKind::StaleRouter => lease_ms + 2000,
        FaultKind::LossyStore => 10_000,
        FaultKind::Router => 1000,
        _ => 3000,
    }));
    let started;
    match fault.kind {
        FaultKind::Kill | FaultKind::Pause => {
            let Some((victim, held)) = busiest else {
                bail!("--fault {}: no node answered /health", fault.kind.name());
            };
            done.target = victim.clone();
            done.target_rooms = held;
            let node = c.node_mut(&victim).context("the chosen node is gone")?;
            let url = node.metrics_url.clone();
            if fault.kind == FaultKind::Kill {
                node.process.kill9();
                started = Instant::now();
                done.steps
                    .push(format!("{victim} killed (SIGKILL) holding {held} rooms"));
            } else {
                let before = room_exits(&url).await;
                node.process.signal(libc::SIGSTOP);
                started = Instant::now();
                tokio::time::sleep(hold).await;
                let node = c.node_mut(&victim).context("the chosen node is gone")?;
                node.process.signal(libc::SIGCONT);
                done.lasted_ms = ms(started.elapsed());
                done.steps.push(format!(
                    "{victim} stopped (SIGSTOP) holding {held} rooms, woken (SIGCONT) after {:.0} ms",
                    done.lasted_ms
                ));
                // Its lease keeper and its fenced writes get a lease time to notice.
                tokio::time::sleep(Duration::from_millis(lease_ms + 1000)).await;
                let after = room_exits(&url).await;
                done.woken_room_exits = after
                    .iter()
                    .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
                    .filter(|(_, v)| *v > 0)
                    .collect();
            }
        }
        FaultKind::RouterOfTwo => {
            started = routers::router_of_two(c, hold, &mut done).await?;
        }
        FaultKind::StaleRouter => {
            let Some(victim) = busiest else {
                bail!("--fault stale-router: no node answered /health");
            };
            started = routers::stale_router(c, victim, files, hold, &mut done).await?;
        }
        FaultKind::Rolling => {
            let ids: Vec<String> = c.nodes.iter().map(|n| n.id.clone()).collect();
            done.target = ids.join(", ");
            started = Instant::now();
            for id in &ids {
                let t = Instant::now();
                let drained = c.restart_node(id, Duration::from_secs(20)).await?;
                done.steps.push(format!(
                    "{id}: SIGTERM, drained and exited in {drained:.0} ms, back in the ring after {:.0} ms",
                    ms(t.elapsed())
                ));
            }
            done.lasted_ms = ms(started.elapsed());
        }
        FaultKind::Partition
        | FaultKind::CutCoordinator
        | FaultKind::CutStore
        | FaultKind::CutRouter
        | FaultKind::LossyStore => {
            let Some((victim, held)) = busiest else {
                bail!("--fault {}: no node answered /health", fault.kind.name());
            };
            if fault.kind != FaultKind::LossyStore {
                done.target = victim.clone();
                done.target_rooms = held;
            } else {
                done.target = "postgres links".into();
            }
            let what = c.cut_links(fault.kind, &victim)?;
            started = Instant::now();
            tokio::time::sleep(hold).await;
            c.heal_links()?;
            done.lasted_ms = ms(started.elapsed());
            done.steps
                .push(format!("{what}; healed after {:.0} ms", done.lasted_ms));
        }
        FaultKind::ClockJump => {
            let Some((victim, held)) = busiest else {
                bail!("--fault clock-jump: no node answered /health");
            };
            c.jump_clock(&victim)?;
            started = Instant::now();
            done.target = victim.clone();
            done.target_rooms = held;
            // libfaketime reads the offset within a second; then the node runs a minute
            // ahead for good, and gets two lease times to show what it does about it.
            tokio::time::sleep(Duration::from_millis(1000 + 2 * lease_ms)).await;
            done.steps.push(format!(
                "{victim}'s clocks (wall and monotonic) jumped {} while it held {held} rooms",
                crate::cluster::CLOCK_JUMP
            ));
        }
        FaultKind::StoreFailover | FaultKind::StoreFailoverAsync => {
            done.target = "postgres".into();
            let lag = c.standby_lag().await.ok();
            done.standby_lag_ms = lag.and_then(|(_, ms)| ms);
            started = Instant::now();
            let promoted = tokio::task::block_in_place(|| c.fail_over_postgres())?;
            done.lasted_ms = ms(started.elapsed());
            let kind = if fault.kind == FaultKind::StoreFailover {
                "synchronous"
            } else {
                "asynchronous"
            };
            let lag = match lag {
                Some((bytes, Some(ms))) => format!("{bytes} bytes ({ms:.0} ms)"),
                Some((bytes, None)) => format!("{bytes} bytes"),
                None => "unknown".to_owned(),
            };
            done.steps.push(format!(
                "the Postgres primary killed (SIGKILL), its {kind} standby promoted in {:.0} ms; \
                 the standby was {lag} of WAL behind just before the kill",
                ms(promoted)
            ));
        }
        FaultKind::NatsLeader | FaultKind::NatsCluster => {
            let what = if fault.kind == FaultKind::NatsLeader {
                let leader = c.kill_nats_leader().await?;
                format!("{leader}, leader of the leases' stream, killed (SIGKILL)")
            } else {
                c.kill_nats()?;
                "all three NATS servers killed (SIGKILL)".to_owned()
            };
            done.target = "nats-cluster".into();
            started = Instant::now();
            tokio::time::sleep(hold).await;
            c.restart_nats().await?;
            done.lasted_ms = ms(started.elapsed());
            done.steps.push(format!(
                "{what}, started again on the same store after {:.0} ms and current with the cluster",
                done.lasted_ms
            ));
        }
        FaultKind::Coordinator | FaultKind::Store | FaultKind::Router => {
            let (target, stopped, back) = match fault.kind {
                FaultKind::Coordinator => (
                    c.own_coordinator_name(),
                    "killed (SIGKILL)",
                    "started again",
                ),
                FaultKind::Store => ("Postgres", "stopped (fast shutdown)", "started again"),
                _ => (
                    "router",
                    "killed (SIGKILL)",
                    "started again and seeing every node",
                ),
            };
            done.target = target.to_lowercase();
            stop_service(c, fault.kind)?;
            started = Instant::now();
            tokio::time::sleep(hold).await;
            restart_service(c, fault.kind).await?;
            done.lasted_ms = ms(started.elapsed());
            done.steps.push(format!(
                "{target} {stopped}, {back} after {:.0} ms",
                done.lasted_ms
            ));
        }
    }
    Ok((done, started))
}

/// Stops the service a coordinator, store or router fault breaks.
fn stop_service(c: &mut Cluster, kind: FaultKind) -> Result<()> {
    match kind {
        FaultKind::Coordinator => c.kill_own_coordinator(),
        FaultKind::Store => tokio::task::block_in_place(|| c.stop_postgres()),
        _ => {
            c.kill_router(0);
            Ok(())
        }
    }
}

/// Starts it again, on the same ports and data.
async fn restart_service(c: &mut Cluster, kind: FaultKind) -> Result<()> {
    match kind {
        FaultKind::Coordinator => c.restart_own_coordinator().await,
        FaultKind::Store => c.restart_postgres().await,
        _ => c.restart_router(0).await,
    }
}

/// A duration in ms, to the µs.
fn ms(d: Duration) -> f64 {
    round3(d.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests;
