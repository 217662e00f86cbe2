//! `--fault`: what to break in a spawned cluster, and when.

use anyhow::{bail, Result};
use serde::Deserialize;

use super::Cli;

#[cfg(test)]
mod tests;

/// A fault injected into a spawned cluster under load (`--fault`).
#[derive(clap::ValueEnum, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// `kill -9` of the node holding the most files.
    Kill,
    /// SIGSTOP of the node holding the most files for longer than its lease, then SIGCONT: the
    /// others take its files, and the woken node must not write.
    Pause,
    /// SIGTERM of every node in turn, each started again and back in the ring before the next.
    Rolling,
    /// `kill -9` of the coordinator's server (a redis-server when `ATRIUM_COORDINATOR` names
    /// Redis, else a nats-server), started again on the same port and store.
    Coordinator,
    /// Postgres stopped (fast shutdown), started again on the same port and data.
    Store,
    /// `kill -9` of the router, started again on the same ports.
    Router,
    /// On a three-server NATS cluster of the run's own (buckets in three copies): `kill -9` of
    /// the server leading the leases' stream, started again on its store after the hold.
    NatsLeader,
    /// On a three-server NATS cluster of the run's own: all three killed with -9 at once,
    /// started again on their stores after the hold.
    NatsCluster,
    /// On a Postgres primary with a synchronous streaming standby of the run's own: `kill -9`
    /// of the primary, then the standby promoted; the nodes find it through their multi-host
    /// URL (`target_session_attrs=read-write`).
    StoreFailover,
    /// The same with an asynchronous standby (commits do not wait for it): what the primary
    /// acked and had not streamed yet is gone after the promotion.
    StoreFailoverAsync,
    /// The clock of the node holding the most files jumped forward by a minute (its wall and
    /// monotonic clocks, through libfaketime preloaded into every node of the run).
    ClockJump,
    /// The node holding the most files cut from everything (what it sends, and what is sent
    /// to its ports) for longer than the lease, then healed.
    Partition,
    /// The node holding the most files cut from the coordinator, not from Postgres, for
    /// longer than the lease, then healed.
    CutCoordinator,
    /// The node holding the most files cut from Postgres, not from the coordinator, then
    /// healed.
    CutStore,
    /// The router cut from the node holding the most files, which still reaches the
    /// coordinator and Postgres, for longer than the lease, then healed.
    CutRouter,
    /// 5% of the packets between every node and Postgres dropped, both ways, and every packet
    /// to Postgres held 200 ms, for the hold (10 s by default).
    LossyStore,
    /// With two routers or more: one router killed with -9, its clients going on through
    /// another; started again after the hold.
    RouterOfTwo,
    /// With two routers or more: one router cut from the coordinator, then the node holding
    /// the most files killed with -9 while the cut router's view of the ring is stale; healed
    /// after the hold.
    StaleRouter,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Rolling => "rolling",
            FaultKind::Coordinator => "coordinator",
            FaultKind::Store => "store",
            FaultKind::Router => "router",
            FaultKind::NatsLeader => "nats-leader",
            FaultKind::NatsCluster => "nats-cluster",
            FaultKind::StoreFailover => "store-failover",
            FaultKind::StoreFailoverAsync => "store-failover-async",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::Partition => "partition",
            FaultKind::CutCoordinator => "cut-coordinator",
            FaultKind::CutStore => "cut-store",
            FaultKind::CutRouter => "cut-router",
            FaultKind::LossyStore => "lossy-store",
            FaultKind::RouterOfTwo => "router-of-two",
            FaultKind::StaleRouter => "stale-router",
        }
    }

    /// Faults on a shared service need servers of the run's own (stopping the suite's shared
    /// Postgres or nats-server would break every other test using it).
    pub fn needs_own_store(self) -> bool {
        matches!(
            self,
            FaultKind::Store
                | FaultKind::StoreFailover
                | FaultKind::StoreFailoverAsync
                | FaultKind::LossyStore
        )
    }

    /// Faults made by dropping packets (`cluster/links.rs`).
    pub fn needs_links(self) -> bool {
        matches!(
            self,
            FaultKind::Partition
                | FaultKind::CutCoordinator
                | FaultKind::CutStore
                | FaultKind::CutRouter
                | FaultKind::LossyStore
                | FaultKind::StaleRouter
        )
    }

    pub fn needs_own_coordinator(self) -> bool {
        matches!(
            self,
            FaultKind::Coordinator | FaultKind::NatsLeader | FaultKind::NatsCluster
        )
    }

    /// Faults on a NATS cluster, which the run starts itself (three servers).
    pub fn needs_nats_cluster(self) -> bool {
        matches!(self, FaultKind::NatsLeader | FaultKind::NatsCluster)
    }

    /// Faults on one router of several.
    pub fn needs_two_routers(self) -> bool {
        matches!(self, FaultKind::RouterOfTwo | FaultKind::StaleRouter)
    }

    /// Faults on a node: the rest of the fleet must be there to serve its files.
    pub fn needs_two_nodes(self) -> bool {
        (self.served_meanwhile() && self != FaultKind::RouterOfTwo)
            || self == FaultKind::StaleRouter
    }

    /// Whether the rest of the fleet should go on serving every file while the fault lasts (a
    /// dead, paused or draining node's files move to the others; a killed router's clients go on
    /// through another), so that recovery counts from
    /// the fault striking rather than from its end.
    pub fn served_meanwhile(self) -> bool {
        matches!(
            self,
            FaultKind::Kill
                | FaultKind::Pause
                | FaultKind::Rolling
                | FaultKind::ClockJump
                | FaultKind::Partition
                | FaultKind::CutCoordinator
                | FaultKind::CutRouter
                | FaultKind::RouterOfTwo
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    pub kind: FaultKind,
    /// Seconds into the measured window.
    pub at: f64,
    /// How long a pause or an outage lasts; None for the default.
    pub hold_ms: Option<u64>,
}

/// `--fault KIND [--fault-at S] [--fault-for MS]`, or `--kill-node S` for `--fault kill`.
pub fn given(g: &Cli, duration: f64) -> Result<Option<Fault>> {
    let (kill_at, kind, at, hold_ms) = (g.kill_node, g.fault, g.fault_at, g.fault_for);
    match (kind, kill_at) {
        (Some(k), Some(_)) if k != FaultKind::Kill => {
            bail!(
                "--kill-node is --fault kill: give one of --kill-node and --fault {}",
                k.name()
            )
        }
        (_, Some(s)) => Ok(Some(Fault {
            kind: FaultKind::Kill,
            at: at.unwrap_or(s),
            hold_ms,
        })),
        (Some(kind), None) => Ok(Some(Fault {
            kind,
            at: at.unwrap_or(duration / 4.0),
            hold_ms,
        })),
        (None, None) if at.is_some() || hold_ms.is_some() => {
            bail!("--fault-at and --fault-for need --fault KIND")
        }
        (None, None) => Ok(None),
    }
}
