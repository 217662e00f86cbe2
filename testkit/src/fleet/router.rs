//! One `atrium-router` process: told a free port and admin port, ready once its admin
//! address answers `/health`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::env::free_port;
use crate::http::{try_request, Resp};
use crate::process::Proc;
use crate::wait;

/// A running `atrium-router`; killed when dropped.
pub struct RouterProc {
    pub port: u16,
    pub admin: u16,
    pub proc: Proc,
}

impl RouterProc {
    /// Spawns `bin` (named `name`) on the coordinator namespace `coordinator` with the
    /// fleet's lease time, then `extra` settings; waits until it answers `/health`.
    pub async fn start(
        bin: &Path,
        name: &str,
        coordinator: &str,
        lease_ms: u64,
        extra: &[(&str, &str)],
    ) -> RouterProc {
        let (port, admin) = (free_port(), free_port());
        let mut cmd = Command::new(bin);
        cmd.env("ATRIUM_ROUTER_BIND", format!("127.0.0.1:{port}"))
            .env("ATRIUM_ROUTER_ADMIN_BIND", format!("127.0.0.1:{admin}"))
            .env("ATRIUM_COORDINATOR", coordinator)
            .env("ATRIUM_LEASE_MS", lease_ms.to_string())
            .env("ATRIUM_LOG", "info")
            .envs(extra.iter().copied());
        let router = RouterProc {
            port,
            admin,
            proc: Proc::spawn(name, cmd),
        };
        let answers = || async {
            match router.health().await {
                Some(h) if h.status == 200 => Ok(()),
                _ => Err(()),
            }
        };
        wait::until(
            Duration::from_secs(30),
            Duration::from_millis(50),
            answers,
            |()| format!("{name} never answered /health:\n{}", router.proc.log()),
        )
        .await;
        router
    }

    /// Its `/health` answer, `None` while it does not answer.
    pub async fn health(&self) -> Option<Resp> {
        try_request(self.admin, "GET", "/health", &[], None).await
    }

    /// Whether it routes to exactly `count` live members right now; the `/health` text
    /// when not.
    pub async fn routes_to(&self, count: usize) -> Result<(), String> {
        match self.health().await {
            Some(h) if h.body()["ring"] == json!(count) && h.body()["members"] == json!(count) => {
                Ok(())
            }
            Some(h) => Err(h.text),
            None => Err("no answer".into()),
        }
    }
}
