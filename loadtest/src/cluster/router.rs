//! The cluster's routers: started, killed, started again, and asked whom they see.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{free_port, Cluster};
use crate::http::{request, Endpoint};

/// One spawned `atrium-router`.
pub struct Router {
    /// `router`, `router-1`, ...: its log (`<name>.log`) and its cgroup go by it.
    pub name: String,
    pub url: String,
    pub admin: Endpoint,
    process: Option<Child>,
    /// Its listening and admin ports, kept for a restart.
    ports: (u16, u16),
}

impl Router {
    /// Router `i` of the cluster on free ports, not started yet.
    pub(super) fn new(i: usize) -> Result<Router> {
        let ports = (free_port()?, free_port()?);
        Ok(Router {
            name: router_name(i),
            url: format!("http://127.0.0.1:{}", ports.0),
            admin: Endpoint::from_url(&format!("http://127.0.0.1:{}", ports.1)),
            process: None,
            ports,
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(Child::id)
    }

    /// The process, taken out of the cluster's hands (to stop it).
    pub(super) fn take(&mut self) -> Option<Child> {
        self.process.take()
    }
}

/// The first router is `router` (as when there was only one), then `router-1`, ...
fn router_name(i: usize) -> String {
    match i {
        0 => "router".into(),
        i => format!("router-{i}"),
    }
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

impl Cluster {
    /// Starts router `i` on its ports (the same ones again after a restart), logging to
    /// `<name>.log`.
    pub(super) fn start_router(&mut self, i: usize) -> Result<()> {
        let name = self.routers[i].name.clone();
        let cgroup = self.links.as_mut().map(|l| l.group(&name)).transpose()?;
        let (port, admin) = self.routers[i].ports;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{name}.log")))?;
        let mut cmd = Command::new(&self.router_bin);
        cmd.env("ATRIUM_ROUTER_BIND", format!("127.0.0.1:{port}"))
            .env("ATRIUM_ROUTER_ADMIN_BIND", format!("127.0.0.1:{admin}"))
            .envs(self.router_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        crate::pin::place(&mut cmd, self.server_cpus.as_ref());
        if let Some(group) = &cgroup {
            super::links::place_in(&mut cmd, group);
        }
        self.routers[i].process = Some(
            cmd.spawn()
                .with_context(|| format!("cannot start {}", self.router_bin.display()))?,
        );
        Ok(())
    }

    /// `kill -9` of router `i`.
    pub fn kill_router(&mut self, i: usize) {
        if let Some(mut r) = self.routers[i].process.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
    }

    /// Starts router `i` again on the same ports and waits until it sees the live nodes.
    pub async fn restart_router(&mut self, i: usize) -> Result<()> {
        self.start_router(i)?;
        let live = self.nodes.len();
        self.wait_members(i, live, Duration::from_secs(30)).await
    }

    /// Waits until every router counts `n` live members.
    pub(super) async fn wait_all_members(&mut self, n: usize, within: Duration) -> Result<()> {
        for i in 0..self.routers.len() {
            self.wait_members(i, n, within).await?;
        }
        Ok(())
    }

    /// Waits until router `i`'s admin `/health` counts `n` live members.
    pub(super) async fn wait_members(
        &mut self,
        i: usize,
        n: usize,
        within: Duration,
    ) -> Result<()> {
        let deadline = Instant::now() + within;
        let mut last = String::new();
        let name = self.routers[i].name.clone();
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.routers[i].process.as_mut().map(Child::try_wait) {
                bail!("{name} exited ({status}); its log:\n{}", self.router_log(i));
            }
            if let Ok(a) = request(
                &self.routers[i].admin,
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
            "{name} did not see {n} nodes within {within:?} (last /health: {last}); its \
             log:\n{}",
            self.router_log(i)
        )
    }

    pub(super) fn router_log(&self, i: usize) -> String {
        let file = self.dir.join(format!("{}.log", self.routers[i].name));
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// The first router's address: where setup, the sampler and the final check go.
    pub fn router_url(&self) -> String {
        self.routers
            .first()
            .map_or_else(String::new, |r| r.url.clone())
    }

    /// The first router's process, the one the run samples.
    pub fn router_pid(&self) -> Option<u32> {
        self.routers.first().and_then(Router::pid)
    }

    /// Every router's address, in order.
    pub fn router_endpoints(&self) -> Vec<Endpoint> {
        self.routers
            .iter()
            .map(|r| Endpoint::from_url(&r.url))
            .collect()
    }

    /// Cuts router `i` from the coordinator only (it still reaches every node); returns what
    /// was cut, for the report.
    pub fn cut_router_from_coordinator(&mut self, i: usize) -> Result<String> {
        let name = self.routers[i].name.clone();
        let coordinator = super::links::ports(&self.coordinator);
        self.links
            .as_mut()
            .context("the run was not started for link faults")?
            .drop_from(&name, &super::links::port_set("dport", &coordinator))?;
        Ok(format!(
            "{name} cut from the coordinator (ports {coordinator:?}), not from the nodes"
        ))
    }
}
