//! The node process: spawned on port 0 with its own data folder, its output kept.

use super::*;

/// A running `atrium-node` child process. Killed (SIGKILL) when dropped; when
/// the test is failing, its output is printed so the failure can be read.
pub struct Node {
    proc: Proc,
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
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_atrium-node"));
        cmd.arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--data")
            .arg(data)
            .env(
                "ATRIUM_LOG",
                std::env::var("ATRIUM_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            // Tests make many files quickly for one account (the ring pickers of
            // the cluster tests, hundreds of boards): the creation rate is raised
            // here, and tests of the rate itself set it back (`envs` win).
            .env("ATRIUM_FILE_CREATES_PER_MINUTE", "1000000")
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
        let mut proc = Proc::spawn("atrium-node", cmd);
        let needle = "listening on http://";
        let rest = proc.wait_line(needle, Duration::from_secs(30)).await;
        let port = parse_port(&format!("{needle}{rest}"))
            .unwrap_or_else(|| panic!("no port in {rest:?}:\n{}", proc.log()));
        proc.name = format!("atrium-node (port {port})");
        Node {
            proc,
            port,
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
        self.proc.pid()
    }

    /// Everything the node printed so far.
    pub fn log(&self) -> String {
        self.proc.log()
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        self.proc.kill9();
    }

    pub fn sigterm(&self) {
        self.proc.sigterm();
    }

    /// Waits up to `dur` for the process to exit on its own.
    pub async fn wait_exit(&mut self, dur: Duration) -> Option<ExitStatus> {
        self.proc.wait_exit(dur).await
    }
}

fn parse_port(line: &str) -> Option<u16> {
    let rest = &line[line.find("listening on http://")? + "listening on http://".len()..];
    let hostport: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']'))
        .collect();
    hostport.rsplit(':').next()?.parse().ok()
}

impl Node {
    /// Whether the node process is still running.
    pub fn alive(&mut self) -> bool {
        self.proc.alive()
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
