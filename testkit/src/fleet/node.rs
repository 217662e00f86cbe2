//! One `atrium-node` process: spawned on port 0 with its data folder, ready once it
//! prints the address it bound.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::env::secret;
use crate::process::Proc;

/// What the node prints once it listens, followed by its address.
const LISTENING: &str = "listening on http://";

/// A running `atrium-node`; killed when dropped, its scratch data folder (if it was given
/// one) removed.
pub struct NodeProc {
    /// Its `ATRIUM_NODE_ID` ("" when it was given none).
    pub id: String,
    pub port: u16,
    pub proc: Proc,
    scratch: Option<PathBuf>,
}

impl NodeProc {
    /// `bin --bind 127.0.0.1:0 --data data`, logging at `ATRIUM_TEST_LOG` (default `info`);
    /// the caller adds its settings.
    pub fn command(bin: &Path, data: &Path) -> Command {
        let mut cmd = Command::new(bin);
        cmd.arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--data")
            .arg(data)
            .env(
                "ATRIUM_LOG",
                std::env::var("ATRIUM_TEST_LOG").unwrap_or_else(|_| "info".into()),
            );
        cmd
    }

    /// Spawns `cmd` (made by [`NodeProc::command`]) as node `id` and waits until it
    /// listens; fails the test, with its output, if it never does.
    pub async fn start(id: &str, cmd: Command) -> NodeProc {
        let name = match id {
            "" => "atrium-node".to_string(),
            id => format!("atrium-node {id}"),
        };
        let mut proc = Proc::spawn(&name, cmd);
        let rest = proc.wait_line(LISTENING, Duration::from_secs(30)).await;
        let port =
            bound_port(&rest).unwrap_or_else(|| panic!("no port in {rest:?}:\n{}", proc.log()));
        proc.name = format!("{name} (port {port})");
        NodeProc {
            id: id.to_string(),
            port,
            proc,
            scratch: None,
        }
    }

    /// Like [`NodeProc::start`], as node `id` of a fleet with `envs`, on a scratch data
    /// folder of its own that goes with it.
    pub async fn start_scratch(bin: &Path, id: &str, envs: &[(String, String)]) -> NodeProc {
        let data = std::env::temp_dir().join(format!("atrium-node-{}", secret()));
        std::fs::create_dir_all(&data).expect("data dir");
        let mut cmd = NodeProc::command(bin, &data);
        cmd.envs(envs.iter().map(|(k, v)| (k, v)))
            .env("ATRIUM_NODE_ID", id);
        let mut node = NodeProc::start(id, cmd).await;
        node.scratch = Some(data);
        node
    }
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        self.proc.kill9();
        if let Some(data) = &self.scratch {
            let _ = std::fs::remove_dir_all(data);
        }
    }
}

/// The port of the address after [`LISTENING`] (`127.0.0.1:4000/...`, `[::1]:4000`).
fn bound_port(rest: &str) -> Option<u16> {
    let hostport: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']'))
        .collect();
    hostport.rsplit(':').next()?.parse().ok()
}

/// What every node of a test fleet runs with: the shared database and coordinator
/// namespace, the lease time, a small pool, and limits and password hashing that a test
/// making many sockets and accounts quickly does not trip over.
pub fn fleet_node_env(database: &str, coordinator: &str, lease_ms: u64) -> Vec<(String, String)> {
    [
        ("ATRIUM_DATABASE_URL", database),
        ("ATRIUM_COORDINATOR", coordinator),
        ("ATRIUM_LEASE_MS", &lease_ms.to_string()),
        ("ATRIUM_DATABASE_POOL", "4"),
        ("ATRIUM_WS_PER_IP", "100000"),
        ("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND", "0"),
        ("ATRIUM_AUTH_PER_IP_PER_MINUTE", "1000"),
        ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
        ("ATRIUM_ARGON2_ITERATIONS", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_from_the_address() {
        assert_eq!(bound_port("127.0.0.1:4000 (data in /x)"), Some(4000));
        assert_eq!(bound_port("[::1]:81/"), Some(81));
        assert_eq!(bound_port("nowhere"), None);
    }
}
