//! A scratch nats-server of the run's own: its port and store stay, so it can be started
//! again as itself.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use super::{free_port, wait_port, Cluster};
use crate::http::{get_text, Endpoint};

/// The run's own NATS: one scratch nats-server, or a three-server cluster with JetStream
/// (`--fault nats-leader`, `--fault nats-cluster`). Ports and stores stay, so each server can
/// be started again as itself.
pub(super) struct OwnNats {
    pub(super) servers: Vec<NatsServer>,
}

pub(super) struct NatsServer {
    pub(super) name: String,
    pub(super) child: Option<Child>,
    pub(super) port: u16,
    /// The cluster's route port and the monitoring port (a cluster's servers only).
    cluster_port: Option<u16>,
    monitor_port: Option<u16>,
    pub(super) store: PathBuf,
}

impl OwnNats {
    /// The coordinator URL for every server (and three copies of each bucket on a cluster).
    fn url(&self) -> String {
        let hosts: Vec<String> = self
            .servers
            .iter()
            .map(|s| format!("nats://127.0.0.1:{}", s.port))
            .collect();
        if self.servers.len() > 1 {
            format!("{}?replicas={}", hosts.join(","), self.servers.len().min(3))
        } else {
            hosts.join(",")
        }
    }
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

impl Cluster {
    fn own_nats(&mut self) -> Result<&mut OwnNats> {
        self.nats
            .as_mut()
            .context("the coordinator is not a nats-server of this run's own")
    }

    /// `kill -9` of every server of the run's own NATS.
    pub fn kill_nats(&mut self) -> Result<()> {
        for s in &mut self.own_nats()?.servers {
            kill(&mut s.child);
        }
        Ok(())
    }

    /// Starts every stopped server of the run's own NATS again on its ports and store.
    pub async fn restart_nats(&mut self) -> Result<()> {
        let dir = self.dir.clone();
        let nats = self.own_nats()?;
        let routes = routes(nats);
        for s in nats.servers.iter_mut().filter(|s| s.child.is_none()) {
            s.child = Some(spawn(&dir, s, &routes)?);
        }
        for s in &nats.servers {
            wait_port(s.port, "nats-server", Duration::from_secs(20)).await?;
        }
        // A cluster takes buckets in three copies only once its servers have elected a
        // JetStream leader and each is current with it.
        for s in &nats.servers {
            if let Some(monitor) = s.monitor_port {
                wait_jetstream(monitor, &s.name).await?;
            }
        }
        Ok(())
    }

    /// `kill -9` of the cluster's server leading the coordinator's leases (the stream behind
    /// the leases bucket; the JetStream meta leader when no stream leader is known). Returns
    /// its name.
    pub async fn kill_nats_leader(&mut self) -> Result<String> {
        let nats = self.own_nats()?;
        let mut leader = None;
        for s in nats.servers.iter().filter(|s| s.child.is_some()) {
            let Some(monitor) = s.monitor_port else {
                continue;
            };
            let monitor = Endpoint::from_url(&format!("http://127.0.0.1:{monitor}"));
            let path = "/jsz?accounts=true&streams=true";
            let Ok(text) = get_text(&monitor, path, Duration::from_secs(2)).await else {
                continue;
            };
            let Ok(jsz) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            leader = leases_leader(&jsz)
                .or_else(|| jsz["meta_cluster"]["leader"].as_str().map(str::to_owned));
            if leader.is_some() {
                break;
            }
        }
        let leader = leader.context("no NATS server named a leader")?;
        let server = nats
            .servers
            .iter_mut()
            .find(|s| s.name == leader)
            .with_context(|| format!("the leader {leader} is not one of the run's servers"))?;
        kill(&mut server.child);
        Ok(leader)
    }

    pub(super) async fn start_nats(&mut self) -> Result<String> {
        self.start_nats_servers(1).await
    }

    /// A three-server NATS cluster with JetStream, routed on loopback.
    pub(super) async fn start_nats_cluster(&mut self) -> Result<String> {
        self.start_nats_servers(3).await
    }

    async fn start_nats_servers(&mut self, count: usize) -> Result<String> {
        let mut servers = Vec::with_capacity(count);
        for i in 0..count {
            let store = self.dir.join(format!("nats-{i}"));
            std::fs::create_dir_all(&store)?;
            let clustered = count > 1;
            servers.push(NatsServer {
                name: format!("lt-nats-{i}"),
                child: None,
                port: free_port()?,
                cluster_port: clustered.then(free_port).transpose()?,
                monitor_port: clustered.then(free_port).transpose()?,
                store,
            });
        }
        self.nats = Some(OwnNats { servers });
        self.restart_nats().await?;
        Ok(self.own_nats()?.url())
    }
}

/// Waits until a cluster's server answers its health check with JetStream current and names
/// a meta leader.
async fn wait_jetstream(monitor: u16, name: &str) -> Result<()> {
    let endpoint = Endpoint::from_url(&format!("http://127.0.0.1:{monitor}"));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let healthy = get_text(&endpoint, "/healthz", Duration::from_secs(2))
            .await
            .is_ok();
        let led = get_text(&endpoint, "/jsz", Duration::from_secs(2))
            .await
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|j| {
                j["meta_cluster"]["leader"]
                    .as_str()
                    .is_some_and(|l| !l.is_empty())
            });
        if healthy && led {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            anyhow::bail!("NATS server {name}: JetStream not ready within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The route URLs of a cluster's servers (none for one server).
fn routes(nats: &OwnNats) -> Vec<String> {
    nats.servers
        .iter()
        .filter_map(|s| s.cluster_port)
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect()
}

fn spawn(dir: &Path, s: &NatsServer, routes: &[String]) -> Result<Child> {
    let bin = nats_binary();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{}.log", s.name)))?;
    let mut cmd = Command::new(&bin);
    crate::pin::place(&mut cmd, None);
    cmd.args([
        "-a",
        "127.0.0.1",
        "-p",
        &s.port.to_string(),
        "-n",
        &s.name,
        "-js",
        "-sd",
    ])
    .arg(&s.store);
    if let (Some(cluster), Some(monitor)) = (s.cluster_port, s.monitor_port) {
        cmd.args(["--cluster_name", "atrium-loadtest"])
            .args(["--cluster", &format!("nats://127.0.0.1:{cluster}")])
            .args(["--routes", &routes.join(",")])
            .args(["-m", &monitor.to_string()]);
    }
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| {
            format!(
                "cannot start {} (install nats-server, e.g. `scripts/services.sh start`, or \
                 set ATRIUM_COORDINATOR)",
                bin.display()
            )
        })
}

fn kill(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// The leader of the stream behind a leases bucket, from a server's `/jsz` with accounts and
/// streams.
fn leases_leader(jsz: &serde_json::Value) -> Option<String> {
    jsz["account_details"]
        .as_array()?
        .iter()
        .flat_map(|a| a["stream_detail"].as_array().into_iter().flatten())
        .find(|st| st["name"].as_str().is_some_and(|n| n.ends_with("-leases")))
        .and_then(|st| st["cluster"]["leader"].as_str())
        .map(str::to_owned)
}
