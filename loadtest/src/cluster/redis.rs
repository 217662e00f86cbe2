//! A scratch redis-server of the run's own, for a coordinator fault when the fleet's
//! coordinator is Redis: killed and started again on the same port and append-only file, as
//! an operator's Redis restarts.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use super::{free_port, wait_port, Cluster};

/// The run's own Redis: its port and folder stay across a restart.
pub(super) struct OwnRedis {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

/// Whether a coordinator URL names Redis.
pub fn is_redis(url: &str) -> bool {
    url.starts_with("redis://") || url.starts_with("rediss://")
}

impl Cluster {
    fn own_redis(&mut self) -> Result<&mut OwnRedis> {
        self.redis
            .as_mut()
            .context("the coordinator is not a redis-server of this run's own")
    }

    /// Starts a scratch redis-server; returns its URL.
    pub(super) async fn start_redis(&mut self) -> Result<String> {
        let dir = self.dir.join("redis");
        std::fs::create_dir_all(&dir)?;
        let port = free_port()?;
        self.redis = Some(OwnRedis {
            child: None,
            port,
            dir,
        });
        self.restart_redis().await?;
        Ok(format!("redis://127.0.0.1:{port}"))
    }

    /// `kill -9` of the run's own Redis.
    pub fn kill_redis(&mut self) -> Result<()> {
        if let Some(mut c) = self.own_redis()?.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        Ok(())
    }

    /// Starts the run's own Redis again on its port and folder (it reads its append-only
    /// file back), unless it runs.
    pub async fn restart_redis(&mut self) -> Result<()> {
        let r = self.own_redis()?;
        if r.child.is_none() {
            let log = std::fs::File::create(r.dir.join("redis.log"))?;
            let mut cmd = Command::new("redis-server");
            crate::pin::place(&mut cmd, None);
            // What an operator runs: the append-only file, written through every second.
            cmd.args(["--bind", "127.0.0.1", "--port", &r.port.to_string()])
                .args([
                    "--save",
                    "",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "everysec",
                ])
                .arg("--dir")
                .arg(&r.dir)
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log);
            r.child = Some(cmd.spawn().context(
                "cannot start redis-server (install it, e.g. `scripts/services.sh start`)",
            )?);
        }
        let port = r.port;
        wait_port(port, "redis-server", Duration::from_secs(20)).await
    }

    /// The run's own coordinator server: `redis-server` or `nats-server`.
    pub fn own_coordinator_name(&self) -> &'static str {
        if self.redis.is_some() {
            "redis-server"
        } else {
            "nats-server"
        }
    }

    /// `kill -9` of the run's own coordinator, whichever kind.
    pub fn kill_own_coordinator(&mut self) -> Result<()> {
        if self.redis.is_some() {
            self.kill_redis()
        } else {
            self.kill_nats()
        }
    }

    /// Starts the run's own coordinator again.
    pub async fn restart_own_coordinator(&mut self) -> Result<()> {
        if self.redis.is_some() {
            self.restart_redis().await
        } else {
            self.restart_nats().await
        }
    }
}
