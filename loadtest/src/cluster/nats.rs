//! A scratch nats-server of the run's own: its port and store stay, so it can be started
//! again as itself.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use super::{free_port, wait_port, Cluster};

/// A scratch nats-server: its port and store stay, so it can be started again as itself.
pub(super) struct OwnNats {
    pub(super) child: Option<Child>,
    pub(super) port: u16,
    pub(super) store: PathBuf,
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

    pub(super) async fn start_nats(&mut self) -> Result<String> {
        let store = self.dir.join("nats");
        std::fs::create_dir_all(&store)?;
        self.start_nats_on(free_port()?, store).await
    }

    pub(super) async fn start_nats_on(&mut self, port: u16, store: PathBuf) -> Result<String> {
        let bin = nats_binary();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("nats.log"))?;
        let mut cmd = Command::new(&bin);
        crate::pin::place(&mut cmd, None);
        let child = cmd
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
}
