//! Starting the fleet: services, a scratch database and namespace, the nodes, the routers.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use atrium_testkit::postgres::with_database;

use super::postgres::pg_connect;
use super::router::router_binary;
use super::{free_port, lease_ms, node_env, Cluster, Node, Router};
use crate::node::Spawned;
use crate::options::{FaultKind, Options};
use crate::setup::random_id;

impl Cluster {
    /// Starts the services (unless the environment names them, and the run's fault does not
    /// need servers of its own), a scratch database and namespace, `nodes` nodes and
    /// `routers` routers, and waits until every router sees every node.
    pub async fn start(
        o: &Options,
        nodes: usize,
        routers: usize,
        server: Option<&Path>,
        router: Option<&Path>,
    ) -> Result<Cluster> {
        let fault = o.fault.map(|f| f.kind);
        if fault == Some(FaultKind::ClockJump) {
            super::clock::check()?;
        }
        let tag = random_id(12).to_lowercase();
        let dir = std::env::temp_dir().join(format!("atrium-loadtest-cluster-{tag}"));
        std::fs::create_dir_all(&dir)?;
        let mut c = Cluster {
            nodes: Vec::new(),
            routers: Vec::new(),
            router_bin: router_binary(router),
            router_env: Vec::new(),
            node_bin: crate::node::find_binary(server),
            server_cpus: o.pin_server.clone(),
            dir,
            admin_db: String::new(),
            db_name: None,
            database_url: String::new(),
            coordinator: String::new(),
            postgres: None,
            postgres_standby: None,
            replication_delay: None,
            links: None,
            nats: None,
            redis: None,
            services: String::new(),
        };
        // From here on, a failure drops `c`, which stops whatever was started.
        if fault.is_some_and(FaultKind::needs_links) {
            c.links = Some(super::links::Links::new()?);
        }
        let coord_server = c.start_services(fault).await?;
        let name = format!("atrium_lt_{tag}");
        pg_connect(&c.admin_db)
            .await?
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .with_context(|| format!("CREATE DATABASE {name}"))?;
        c.db_name = Some(name.clone());
        c.database_url = with_database(&c.admin_db, &name);
        c.coordinator = atrium_testkit::fleet::namespaced(&coord_server, "lt");
        for i in 0..nodes {
            c.start_node(o, format!("lt-n{i}")).await?;
        }
        c.router_env = router_env(o, &c.coordinator);
        for i in 0..routers {
            c.routers.push(Router::new(i)?);
            c.start_router(i)?;
        }
        c.wait_all_members(nodes, Duration::from_secs(30)).await?;
        Ok(c)
    }

    /// Postgres and the coordinator: the ones the environment names, unless the run's fault
    /// needs servers of its own, else scratch ones. Sets the admin database URL and says where
    /// each came from; returns the coordinator's server URL.
    async fn start_services(&mut self, fault: Option<FaultKind>) -> Result<String> {
        let (db, db_from) = match given("ATRIUM_DATABASE_URL", fault, FaultKind::needs_own_store) {
            Some(url) => (url, "Postgres from ATRIUM_DATABASE_URL"),
            None if fault == Some(FaultKind::StoreFailover) => (
                self.start_postgres_pair(true)
                    .await
                    .context("scratch Postgres primary and standby")?,
                "scratch Postgres primary with a synchronous standby",
            ),
            None if fault == Some(FaultKind::StoreFailoverAsync) => (
                self.start_postgres_pair(false)
                    .await
                    .context("scratch Postgres primary and standby")?,
                // 200 ms: postgres::STANDBY_DELAY.
                "scratch Postgres primary with an asynchronous standby 200 ms away",
            ),
            None => (
                self.start_postgres().await.context("scratch Postgres")?,
                "scratch Postgres",
            ),
        };
        self.admin_db = db;
        let (coord, coord_from) = match given(
            "ATRIUM_COORDINATOR",
            fault,
            FaultKind::needs_own_coordinator,
        ) {
            Some(url) => (url, "coordinator from ATRIUM_COORDINATOR"),
            None if fault.is_some_and(FaultKind::needs_nats_cluster) => (
                self.start_nats_cluster()
                    .await
                    .context("scratch NATS cluster")?,
                "scratch NATS cluster of 3 servers (3 replicas)",
            ),
            // A coordinator fault on a fleet whose coordinator is Redis breaks a Redis.
            None if std::env::var("ATRIUM_COORDINATOR")
                .is_ok_and(|u| super::redis::is_redis(&u)) =>
            {
                (
                    self.start_redis().await.context("scratch redis-server")?,
                    "scratch redis-server",
                )
            }
            None => (
                self.start_nats().await.context("scratch nats-server")?,
                "scratch nats-server",
            ),
        };
        self.services = format!("{db_from}, {coord_from}");
        Ok(coord)
    }

    /// Starts node `id` on a free port, with an admin address of its own for `/metrics`.
    async fn start_node(&mut self, o: &Options, id: String) -> Result<()> {
        let port = free_port()?;
        let mut env = node_env(o, &id, port, &self.database_url, &self.coordinator);
        if !env.iter().any(|(k, _)| k == "ATRIUM_ADMIN_BIND") {
            env.push((
                "ATRIUM_ADMIN_BIND".into(),
                format!("127.0.0.1:{}", free_port()?),
            ));
        }
        let process = self.spawn_node(port, &env).await?;
        let url = process.url.clone();
        let metrics_url = env
            .iter()
            .find(|(k, _)| k == "ATRIUM_ADMIN_BIND")
            .map_or_else(|| url.clone(), |(_, a)| format!("http://{a}"));
        self.nodes.push(Node {
            id,
            url,
            metrics_url,
            process,
            port,
            env,
        });
        Ok(())
    }

    async fn spawn_node(&mut self, port: u16, env: &[(String, String)]) -> Result<Spawned> {
        let id = env
            .iter()
            .find(|(k, _)| k == "ATRIUM_NODE_ID")
            .map_or("node", |(_, v)| v.as_str());
        let cgroup = self.links.as_mut().map(|l| l.group(id)).transpose()?;
        let (bin, env, cpus) = (
            self.node_bin.clone(),
            env.to_vec(),
            self.server_cpus.clone(),
        );
        tokio::task::spawn_blocking(move || {
            Spawned::start(&bin, port, &env, cpus.as_ref(), cgroup.as_deref())
        })
        .await?
    }

    pub fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        self.nodes.iter_mut().find(|n| n.id == id)
    }

    /// SIGTERM to node `id`; waits up to `within` for it to drain and exit, then starts it again
    /// as the same node (id, port, settings) and waits until every router sees every node.
    /// Returns how long its drain took, in ms.
    pub async fn restart_node(&mut self, id: &str, within: Duration) -> Result<f64> {
        let node = self.node_mut(id).context("no such node")?;
        let t = Instant::now();
        let status = tokio::task::block_in_place(|| node.process.terminate(within));
        let drained_ms = t.elapsed().as_secs_f64() * 1000.0;
        if status.contains("after") {
            bail!("node {id} did not drain: {status}");
        }
        let (port, env) = (node.port, node.env.clone());
        let process = self.spawn_node(port, &env).await?;
        // The old process's folder goes with it.
        self.node_mut(id).context("no such node")?.process = process;
        let n = self.nodes.len();
        self.wait_all_members(n, Duration::from_secs(30)).await?;
        Ok(drained_ms)
    }
}

/// A service URL from environment variable `var`, unless it is empty or the run's fault needs
/// a server of the run's own.
fn given(var: &str, fault: Option<FaultKind>, needs_own: fn(FaultKind) -> bool) -> Option<String> {
    std::env::var(var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .filter(|_| !fault.is_some_and(needs_own))
}

/// The router's settings: the fleet's coordinator and lease, quick drains, no cap on
/// connections per address (every simulated person comes from this host), and the user's
/// `ATRIUM_ROUTER_*` settings.
fn router_env(o: &Options, coordinator: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![
        ("ATRIUM_COORDINATOR".into(), coordinator.to_string()),
        ("ATRIUM_LEASE_MS".into(), lease_ms(o).to_string()),
        ("ATRIUM_ROUTER_DRAIN_MS".into(), "200".into()),
        ("ATRIUM_ROUTER_SHUTDOWN_MS".into(), "3000".into()),
        ("ATRIUM_ROUTER_CONNECTIONS_PER_IP".into(), "0".into()),
    ];
    env.extend(
        o.env
            .iter()
            .filter(|(k, _)| k.starts_with("ATRIUM_ROUTER_"))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    env
}
