//! `--spawn-cluster N`: N `atrium-node` processes sharing a scratch Postgres database and a
//! coordinator namespace, behind one `atrium-router`; the services too when the environment
//! names none (a scratch Postgres from `initdb` and `nats-server -js`, on free loopback ports).
//! Everything started here is stopped and removed by [`Cluster::stop`] (or on drop).

use atrium_testkit::postgres::with_database;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::http::{request, Endpoint};
use crate::node::Spawned;
use crate::options::Options;
use crate::setup::random_id;

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

/// A scratch Postgres started from `initdb` in a temporary folder.
struct OwnPostgres {
    bin: PathBuf,
    dir: PathBuf,
    as_postgres: bool,
    port: u16,
    log: String,
}

/// A scratch nats-server: its port and store stay, so it can be started again as itself.
struct OwnNats {
    child: Option<Child>,
    port: u16,
    store: PathBuf,
}

/// The spawned fleet and the services it runs on.
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub router_url: String,
    pub router_admin: Endpoint,
    router: Option<Child>,
    /// The router's listening and admin ports, kept for a restart.
    router_ports: (u16, u16),
    router_bin: PathBuf,
    router_env: Vec<(String, String)>,
    node_bin: PathBuf,
    dir: PathBuf,
    /// Server URL to connect to for CREATE/DROP DATABASE, and the scratch database's name.
    admin_db: String,
    db_name: Option<String>,
    pub database_url: String,
    pub coordinator: String,
    postgres: Option<OwnPostgres>,
    nats: Option<OwnNats>,
    /// What the report says about where the services came from.
    pub services: String,
}

/// A port nobody listens on right now.
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn beside_me(name: &str) -> Option<PathBuf> {
    let me = std::env::current_exe().ok()?;
    let p = me.parent()?.join(name);
    p.is_file().then_some(p)
}

/// `atrium-router`: the one given, else next to this tool, else on PATH.
pub fn router_binary(given: Option<&Path>) -> PathBuf {
    given
        .map(Path::to_path_buf)
        .or_else(|| beside_me("atrium-router"))
        .unwrap_or_else(|| PathBuf::from("atrium-router"))
}

/// `nats-server`: `ATRIUM_LOADTEST_NATS_SERVER`, else `.services/bin/nats-server` of the
/// current folder or of the checkout this tool was built in, else on PATH.
fn nats_binary() -> PathBuf {
    if let Ok(p) = std::env::var("ATRIUM_LOADTEST_NATS_SERVER") {
        return PathBuf::from(p);
    }
    let mut candidates = vec![PathBuf::from(".services/bin/nats-server")];
    if let Ok(me) = std::env::current_exe() {
        // target/{debug,release}/atrium-loadtest → the checkout.
        if let Some(root) = me.parent().and_then(Path::parent).and_then(Path::parent) {
            candidates.push(root.join(".services/bin/nats-server"));
        }
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("nats-server"))
}

/// The folder holding Postgres's `initdb` and `pg_ctl`.
fn postgres_bin() -> Result<PathBuf> {
    atrium_testkit::postgres::server_binaries().ok_or_else(|| {
        anyhow!(
            "no Postgres binaries (initdb, pg_ctl) found: install postgresql, or set \
                 ATRIUM_DATABASE_URL to a server where a scratch database may be created"
        )
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a Postgres tool, as the `postgres` user when we are root (Postgres refuses root).
fn pg_tool(bin: &Path, tool: &str, as_postgres: bool, args: &[&str]) -> Result<()> {
    let mut cmd = if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(tool));
        c
    } else {
        Command::new(bin.join(tool))
    };
    let out = cmd
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {tool}"))?;
    if !out.status.success() {
        bail!(
            "{tool} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

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

/// `pg_ctl start` on the scratch server's data, port and log.
fn pg_start(pg: &OwnPostgres) -> Result<()> {
    let data = pg.dir.to_string_lossy().to_string();
    let opts = format!(
        "-c listen_addresses=127.0.0.1 -p {} -c unix_socket_directories='' \
         -c max_connections=300",
        pg.port
    );
    pg_tool(
        &pg.bin,
        "pg_ctl",
        pg.as_postgres,
        &["-D", &data, "-l", &pg.log, "-w", "-o", &opts, "start"],
    )
}

async fn pg_connect(url: &str) -> Result<tokio_postgres::Client> {
    atrium_testkit::postgres::try_connect(url)
        .await
        .map_err(|e| anyhow!("cannot connect to Postgres at {url}: {e}"))
}

/// A coordinator URL with its own namespace, so runs sharing a server never meet.
pub fn coordinator_with_namespace(server: &str, namespace: &str) -> String {
    let base = server.split_once('?').map_or(server, |(b, _)| b);
    format!("{}?namespace={namespace}", base.trim_end_matches('/'))
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
    for (k, v) in &o.env {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}

impl Cluster {
    /// Starts the services (unless the environment names them, and the run's fault does not
    /// need servers of its own), a scratch database and namespace, `nodes` nodes and the
    /// router, and waits until the router sees every node.
    pub async fn start(
        o: &Options,
        nodes: usize,
        server: Option<&Path>,
        router: Option<&Path>,
    ) -> Result<Cluster> {
        let fault = o.fault.map(|f| f.kind);
        let tag = random_id(12).to_lowercase();
        let dir = std::env::temp_dir().join(format!("atrium-loadtest-cluster-{tag}"));
        std::fs::create_dir_all(&dir)?;
        let mut c = Cluster {
            nodes: Vec::new(),
            router_url: String::new(),
            router_admin: Endpoint::from_url("http://127.0.0.1:0"),
            router: None,
            router_ports: (0, 0),
            router_bin: router_binary(router),
            router_env: Vec::new(),
            node_bin: crate::node::find_binary(server),
            dir,
            admin_db: String::new(),
            db_name: None,
            database_url: String::new(),
            coordinator: String::new(),
            postgres: None,
            nats: None,
            services: String::new(),
        };
        // From here on, a failure drops `c`, which stops whatever was started.
        let env_db = std::env::var("ATRIUM_DATABASE_URL")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .filter(|_| !fault.is_some_and(|f| f.needs_own_store()));
        let env_coord = std::env::var("ATRIUM_COORDINATOR")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .filter(|_| !fault.is_some_and(|f| f.needs_own_coordinator()));
        let mut services = Vec::new();
        c.admin_db = match env_db {
            Some(url) => {
                services.push("Postgres from ATRIUM_DATABASE_URL".to_string());
                url
            }
            None => {
                let url = c.start_postgres().await.context("scratch Postgres")?;
                services.push("scratch Postgres".to_string());
                url
            }
        };
        let coord_server = match env_coord {
            Some(url) => {
                services.push("coordinator from ATRIUM_COORDINATOR".to_string());
                url
            }
            None => {
                let url = c.start_nats().await.context("scratch nats-server")?;
                services.push("scratch nats-server".to_string());
                url
            }
        };
        c.services = services.join(", ");
        let name = format!("atrium_lt_{tag}");
        pg_connect(&c.admin_db)
            .await?
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .with_context(|| format!("CREATE DATABASE {name}"))?;
        c.db_name = Some(name.clone());
        c.database_url = with_database(&c.admin_db, &name);
        c.coordinator = coordinator_with_namespace(&coord_server, &format!("lt{tag}"));

        for i in 0..nodes {
            let id = format!("lt-n{i}");
            let port = free_port()?;
            let mut env = node_env(o, &id, port, &c.database_url, &c.coordinator);
            if !env.iter().any(|(k, _)| k == "ATRIUM_ADMIN_BIND") {
                env.push((
                    "ATRIUM_ADMIN_BIND".into(),
                    format!("127.0.0.1:{}", free_port()?),
                ));
            }
            let process = c.spawn_node(port, &env).await?;
            let url = process.url.clone();
            let metrics_url = env
                .iter()
                .find(|(k, _)| k == "ATRIUM_ADMIN_BIND")
                .map_or_else(|| url.clone(), |(_, a)| format!("http://{a}"));
            c.nodes.push(Node {
                id,
                url,
                metrics_url,
                process,
                port,
                env,
            });
        }

        c.router_ports = (free_port()?, free_port()?);
        let mut env: Vec<(String, String)> = vec![
            ("ATRIUM_COORDINATOR".into(), c.coordinator.clone()),
            ("ATRIUM_LEASE_MS".into(), lease_ms(o).to_string()),
            ("ATRIUM_ROUTER_DRAIN_MS".into(), "200".into()),
            ("ATRIUM_ROUTER_SHUTDOWN_MS".into(), "3000".into()),
        ];
        env.extend(
            o.env
                .iter()
                .filter(|(k, _)| k.starts_with("ATRIUM_ROUTER_"))
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        c.router_env = env;
        c.start_router()?;
        let (port, admin) = c.router_ports;
        c.router_url = format!("http://127.0.0.1:{port}");
        c.router_admin = Endpoint::from_url(&format!("http://127.0.0.1:{admin}"));
        c.wait_members(nodes, Duration::from_secs(30)).await?;
        Ok(c)
    }

    async fn spawn_node(&self, port: u16, env: &[(String, String)]) -> Result<Spawned> {
        let (bin, env) = (self.node_bin.clone(), env.to_vec());
        tokio::task::spawn_blocking(move || Spawned::start(&bin, port, &env)).await?
    }

    /// Starts the router on its ports (the same ones again after a restart), logging to
    /// `router.log`.
    fn start_router(&mut self) -> Result<()> {
        let (port, admin) = self.router_ports;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("router.log"))?;
        let mut cmd = Command::new(&self.router_bin);
        cmd.env("ATRIUM_ROUTER_BIND", format!("127.0.0.1:{port}"))
            .env("ATRIUM_ROUTER_ADMIN_BIND", format!("127.0.0.1:{admin}"))
            .envs(self.router_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        self.router = Some(
            cmd.spawn()
                .with_context(|| format!("cannot start {}", self.router_bin.display()))?,
        );
        Ok(())
    }

    /// `kill -9` of the router.
    pub fn kill_router(&mut self) {
        if let Some(mut r) = self.router.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
    }

    /// Starts the router again on the same ports and waits until it sees the live nodes.
    pub async fn restart_router(&mut self) -> Result<()> {
        self.start_router()?;
        let live = self.nodes.len();
        self.wait_members(live, Duration::from_secs(30)).await
    }

    pub fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        self.nodes.iter_mut().find(|n| n.id == id)
    }

    /// SIGTERM to node `id`; waits up to `within` for it to drain and exit, then starts it again
    /// as the same node (id, port, settings) and waits until the router sees every node.
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
        self.wait_members(n, Duration::from_secs(30)).await?;
        Ok(drained_ms)
    }

    /// `kill -9` of the scratch nats-server (only one this run started can be stopped).
    pub fn kill_nats(&mut self) -> Result<()> {
        let nats = self
            .nats
            .as_mut()
            .context("the coordinator is not a nats-server of this run's own")?;
        if let Some(mut child) = nats.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        Ok(())
    }

    /// Starts the scratch nats-server again on its port and store.
    pub async fn restart_nats(&mut self) -> Result<()> {
        let nats = self
            .nats
            .take()
            .context("no nats-server of this run's own")?;
        self.start_nats_on(nats.port, nats.store).await.map(|_| ())
    }

    /// Stops the scratch Postgres (fast shutdown: open sessions are cut off).
    pub fn stop_postgres(&mut self) -> Result<()> {
        let pg = self
            .postgres
            .as_ref()
            .context("Postgres is not a server of this run's own")?;
        let data = pg.dir.to_string_lossy().to_string();
        pg_tool(
            &pg.bin,
            "pg_ctl",
            pg.as_postgres,
            &["-D", &data, "-m", "fast", "-w", "stop"],
        )
    }

    /// Starts the scratch Postgres again on its port and data.
    pub async fn restart_postgres(&mut self) -> Result<()> {
        let pg = self
            .postgres
            .as_ref()
            .context("Postgres is not a server of this run's own")?;
        pg_start(pg)?;
        wait_port(pg.port, "postgres", Duration::from_secs(20)).await
    }

    async fn start_postgres(&mut self) -> Result<String> {
        let bin = postgres_bin()?;
        let dir = self.dir.join("postgres");
        std::fs::create_dir_all(&dir)?;
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&self.dir)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                bail!(
                    "running as root, Postgres must run as the `postgres` user, and {} could not \
                     be given to it (is there a postgres user?)",
                    self.dir.display()
                );
            }
        }
        let data = dir.join("data");
        let data_s = data.to_string_lossy().to_string();
        pg_tool(
            &bin,
            "initdb",
            as_postgres,
            &["-D", &data_s, "-U", "atrium", "--auth=trust", "-E", "UTF8"],
        )?;
        let port = free_port()?;
        let pg = OwnPostgres {
            bin,
            dir: data,
            as_postgres,
            port,
            log: dir.join("postgres.log").to_string_lossy().to_string(),
        };
        pg_start(&pg)?;
        self.postgres = Some(pg);
        wait_port(port, "postgres", Duration::from_secs(20)).await?;
        Ok(format!("postgres://atrium@127.0.0.1:{port}/postgres"))
    }

    async fn start_nats(&mut self) -> Result<String> {
        let store = self.dir.join("nats");
        std::fs::create_dir_all(&store)?;
        self.start_nats_on(free_port()?, store).await
    }

    async fn start_nats_on(&mut self, port: u16, store: PathBuf) -> Result<String> {
        let bin = nats_binary();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("nats.log"))?;
        let child = Command::new(&bin)
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(&store)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start {} (install nats-server, e.g. `scripts/services.sh start`, or \
                     set ATRIUM_COORDINATOR)",
                    bin.display()
                )
            })?;
        self.nats = Some(OwnNats {
            child: Some(child),
            port,
            store,
        });
        wait_port(port, "nats-server", Duration::from_secs(20)).await?;
        Ok(format!("nats://127.0.0.1:{port}"))
    }

    /// Waits until the router's admin `/health` counts `n` live members.
    async fn wait_members(&mut self, n: usize, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        let mut last = String::new();
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.router.as_mut().map(Child::try_wait) {
                bail!(
                    "the router exited ({status}); its log:\n{}",
                    self.router_log()
                );
            }
            if let Ok(a) = request(
                &self.router_admin,
                "GET",
                "/health",
                None,
                None,
                Duration::from_millis(500),
            )
            .await
            {
                if a.body["ring"].as_u64() == Some(n as u64) {
                    return Ok(());
                }
                last = a.body.to_string();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!(
            "the router did not see {n} nodes within {within:?} (last /health: {last}); its \
             log:\n{}",
            self.router_log()
        )
    }

    fn router_log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("router.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    pub fn router_pid(&self) -> Option<u32> {
        self.router.as_ref().map(Child::id)
    }

    /// Stops the router, the nodes, drops the scratch database, stops the scratch services and
    /// removes the temporary folder. Returns a line per step that did not go cleanly.
    pub async fn stop(mut self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(mut r) = self.router.take() {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(r.id() as libc::pid_t, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                match r.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(50)).await
                    }
                    _ => {
                        let _ = r.kill();
                        let _ = r.wait();
                        notes.push("router killed after 5 s".into());
                        break;
                    }
                }
            }
        }
        let nodes = std::mem::take(&mut self.nodes);
        let stops: Vec<_> = nodes
            .into_iter()
            .map(|n| tokio::task::spawn_blocking(move || (n.id.clone(), n.process.stop())))
            .collect();
        for s in stops {
            if let Ok((id, status)) = s.await {
                if status.contains("after") {
                    notes.push(format!("node {id}: {status}"));
                }
            }
        }
        if let Some(name) = self.db_name.take() {
            let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
            let dropped = async {
                pg_connect(&self.admin_db)
                    .await?
                    .batch_execute(&sql)
                    .await
                    .map_err(anyhow::Error::from)
            };
            if let Err(e) = tokio::time::timeout(Duration::from_secs(10), dropped)
                .await
                .unwrap_or_else(|_| Err(anyhow!("timed out")))
            {
                notes.push(format!("could not drop database {name}: {e:#}"));
            }
        }
        self.stop_services();
        notes
    }

    fn stop_services(&mut self) {
        if let Some(pg) = self.postgres.take() {
            let data = pg.dir.to_string_lossy().to_string();
            let _ = pg_tool(
                &pg.bin,
                "pg_ctl",
                pg.as_postgres,
                &["-D", &data, "-m", "immediate", "-w", "stop"],
            );
        }
        if let Some(mut child) = self.nats.take().and_then(|n| n.child) {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A failed start or a panic: no time for niceties, but leave nothing running.
        if let Some(mut r) = self.router.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
        for n in &mut self.nodes {
            n.process.kill9();
        }
        self.nodes.clear();
        if let Some(name) = self.db_name.take() {
            atrium_testkit::postgres::drop_database(&self.admin_db, &name);
        }
        self.stop_services();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinators_get_a_namespace_of_their_own() {
        assert_eq!(
            coordinator_with_namespace("nats://127.0.0.1:4222/", "lt1"),
            "nats://127.0.0.1:4222?namespace=lt1"
        );
        assert_eq!(
            coordinator_with_namespace("nats://h:1?namespace=prod", "lt2"),
            "nats://h:1?namespace=lt2"
        );
    }
}
