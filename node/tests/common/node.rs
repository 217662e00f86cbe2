//! The node process: spawned on port 0 with its own data folder, its output kept.

use super::*;
use atrium_testkit::fleet::NodeProc;

/// A running `atrium-node` child process (the test kit's [`NodeProc`]). Killed
/// (SIGKILL) when dropped; when the test is failing, its output is printed so the
/// failure can be read.
pub struct Node {
    node: NodeProc,
    pub port: u16,
    pub data: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl Node {
    /// Starts a node with a fresh temporary data folder.
    pub async fn start(envs: &[(&str, &str)]) -> Node {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut node = Node::start_in(tmp.path(), envs).await;
        node._tmp = Some(tmp);
        node
    }

    /// Starts a node on an existing data folder (the caller keeps it alive),
    /// e.g. to restart on the folder of a node that was killed.
    pub async fn start_in(data: &Path, envs: &[(&str, &str)]) -> Node {
        let mut cmd = NodeProc::command(Path::new(env!("CARGO_BIN_EXE_atrium-node")), data);
        // Tests make many files quickly for one account (the ring pickers of
        // the cluster tests, hundreds of boards): the creation rate is raised
        // here, and tests of the rate itself set it back (`envs` win).
        cmd.env("ATRIUM_FILE_CREATES_PER_MINUTE", "1000000")
            // /metrics on an admin address of its own, as deployments have it (on
            // the main address it needs a server admin's token); a test that wants
            // none passes ATRIUM_ADMIN_BIND as "".
            .env("ATRIUM_ADMIN_BIND", "127.0.0.1:0");
        for (k, v) in envs {
            if *k == "ATRIUM_ADMIN_BIND" && v.is_empty() {
                cmd.env_remove(k);
            } else {
                cmd.env(k, v);
            }
        }
        let node = NodeProc::start("", cmd).await;
        Node {
            port: node.port,
            node,
            data: data.to_path_buf(),
            _tmp: None,
        }
    }

    /// The port of the node's admin address (`/metrics`), when it has one: the
    /// node prints it right after its main address.
    pub fn admin_port(&self) -> Option<u16> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let log = self.log();
            if let Some(i) = log.find("metrics on http://") {
                let rest = &log[i + "metrics on http://".len()..];
                let hostport: String = rest
                    .chars()
                    .take_while(|c| *c != '/' && !c.is_whitespace())
                    .collect();
                return hostport.rsplit(':').next().and_then(|p| p.parse().ok());
            }
            if log.contains("data in ") || Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    pub fn ws_url(&self, file: &str) -> String {
        format!("ws://127.0.0.1:{}/files/{}/ws", self.port, file)
    }

    pub fn pid(&self) -> i32 {
        self.node.proc.pid()
    }

    /// Everything the node printed so far.
    pub fn log(&self) -> String {
        self.node.proc.log()
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        self.node.proc.kill9();
    }

    pub fn sigterm(&self) {
        self.node.proc.sigterm();
    }

    /// Sends `sig` (SIGSTOP, SIGCONT...).
    pub fn signal(&self, sig: libc::c_int) {
        self.node.proc.signal(sig);
    }

    /// Waits up to `dur` for the process to exit on its own.
    pub async fn wait_exit(&mut self, dur: Duration) -> Option<ExitStatus> {
        self.node.proc.wait_exit(dur).await
    }
}

impl Node {
    /// Whether the node process is still running.
    pub fn alive(&mut self) -> bool {
        self.node.proc.alive()
    }

    /// Waits until the node's output contains `needle`; returns the output.
    pub async fn wait_log(&self, needle: &str, dur: Duration) -> String {
        let deadline = Instant::now() + dur;
        loop {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "the node did not print {needle:?} within {dur:?}; output:\n{log}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
