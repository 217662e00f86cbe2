//! The cluster's router: started, killed, started again, and asked whom it sees.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::Cluster;
use crate::http::request;

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
    /// Starts the router on its ports (the same ones again after a restart), logging to
    /// `router.log`.
    pub(super) fn start_router(&mut self) -> Result<()> {
        let cgroup = self.links.as_mut().map(|l| l.group("router")).transpose()?;
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
        crate::pin::place(&mut cmd, self.server_cpus.as_ref());
        if let Some(group) = &cgroup {
            super::links::place_in(&mut cmd, group);
        }
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

    /// Waits until the router's admin `/health` counts `n` live members.
    pub(super) async fn wait_members(&mut self, n: usize, within: Duration) -> Result<()> {
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

    pub(super) fn router_log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("router.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    pub fn router_pid(&self) -> Option<u32> {
        self.router.as_ref().map(Child::id)
    }
}
