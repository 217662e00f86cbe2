//! `--spawn-cluster N`: N `atrium-node` processes sharing a scratch Postgres database and a
//! coordinator namespace, behind one `atrium-router` (or `--routers N`); the services too when the environment
//! names none (a scratch Postgres from `initdb` and `nats-server -js`, on free loopback ports).
//! Everything started here is stopped and removed by [`Cluster::stop`] (or on drop).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::node::Spawned;
use crate::options::Options;
use crate::pin::CpuList;

use nats::OwnNats;
use postgres::OwnPostgres;

mod clock;
mod delay;
mod filter;
mod links;
pub use clock::JUMP as CLOCK_JUMP;
pub use links::place_in;
mod nats;
mod postgres;
mod redis;
mod router;
pub use router::Router;
mod start;
mod stop;

/// Lease time the fleet uses unless `--env ATRIUM_LEASE_MS=...` says otherwise.
pub const DEFAULT_LEASE_MS: u64 = 3000;

/// One spawned node, with what it takes to start it again as the same node.
pub struct Node {
    pub id: String,
    pub url: String,
    /// Where its `/metrics` is: the admin address each spawned node gets (on the main
    /// address `/metrics` is for server admins only).
    pub metrics_url: String,
    pub process: Spawned,
    port: u16,
    env: Vec<(String, String)>,
}

/// The spawned fleet and the services it runs on.
pub struct Cluster {
    pub nodes: Vec<Node>,
    /// The routers in front of the nodes; the first is the run's own way in.
    pub routers: Vec<Router>,
    router_bin: PathBuf,
    router_env: Vec<(String, String)>,
    node_bin: PathBuf,
    /// `--pin-server`: the CPUs of every node and router.
    server_cpus: Option<CpuList>,
    dir: PathBuf,
    /// Server URL to connect to for CREATE/DROP DATABASE, and the scratch database's name.
    admin_db: String,
    db_name: Option<String>,
    pub database_url: String,
    pub coordinator: String,
    postgres: Option<OwnPostgres>,
    /// Link faults: the run's cgroups and nftables table.
    links: Option<links::Links>,
    /// `--fault store-failover`: the primary's streaming standby.
    postgres_standby: Option<OwnPostgres>,
    /// `store-failover-async`: the replication stream held back on its way to the standby.
    replication_delay: Option<delay::Delayer>,
    nats: Option<OwnNats>,
    /// `--fault coordinator` with a Redis coordinator: the run's own redis-server.
    redis: Option<redis::OwnRedis>,
    /// What the report says about where the services came from.
    pub services: String,
}

/// A port nobody listens on right now.
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Whether the run's folders (node logs, data, the services' logs) are left in place at the
/// end for reading (`ATRIUM_LOADTEST_KEEP=1`); the default removes them.
pub fn keep_run_folders() -> bool {
    std::env::var("ATRIUM_LOADTEST_KEEP").is_ok_and(|v| v == "1")
}

/// Waits until something listens on `port`.
async fn wait_port(port: u16, what: &str, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("{what} did not open port {port} within {within:?}")
}

/// The lease time the fleet runs with.
pub fn lease_ms(o: &Options) -> u64 {
    o.env
        .get("ATRIUM_LEASE_MS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_LEASE_MS)
}

/// Settings of node `id` on `port`: the single-node load settings, the cluster's, then the
/// user's `--env`, which wins.
pub fn node_env(
    o: &Options,
    id: &str,
    port: u16,
    database_url: &str,
    coordinator: &str,
) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = crate::node::spawn_env(o).into_iter().collect();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    set("ATRIUM_NODE_ID", id.to_string());
    set("ATRIUM_ADVERTISE", format!("127.0.0.1:{port}"));
    set("ATRIUM_DATABASE_URL", database_url.to_string());
    set("ATRIUM_COORDINATOR", coordinator.to_string());
    set("ATRIUM_LEASE_MS", lease_ms(o).to_string());
    // The router is on loopback: believe its X-Forwarded-For. Every client is 127.0.0.1 too,
    // so the per-address caps stay raised (spawn_env).
    set("ATRIUM_TRUST_PROXY", "127.0.0.1".into());
    set("ATRIUM_DATABASE_POOL", "8".into());
    if o.fault
        .is_some_and(|f| f.kind == crate::options::FaultKind::ClockJump)
    {
        for (k, v) in clock::node_env(o, id) {
            set(k, v);
        }
    }
    for (k, v) in &o.env {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}
