//! A scratch node: its process and its temporary folder.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::listening_url;
use crate::pin::{self, CpuList};

/// A scratch node: its process and its temporary folder, both gone when this is stopped or
/// dropped.
pub struct Spawned {
    child: Child,
    dir: PathBuf,
    pub url: String,
    /// Gone and reaped already (killed with SIGKILL, or stopped by `terminate`).
    killed: bool,
}

impl Spawned {
    /// Starts `binary` on 127.0.0.1:`port` (0: any free port) with a fresh data folder and
    /// `env`, on `cpus` and in `cgroup` when given, and waits (up to 30 s) for it to say where
    /// it listens.
    pub fn start(
        binary: &Path,
        port: u16,
        env: &[(String, String)],
        cpus: Option<&CpuList>,
        cgroup: Option<&Path>,
    ) -> Result<Spawned> {
        let dir = std::env::temp_dir().join(format!(
            "atrium-loadtest-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(dir.join("data"))?;
        let log = std::fs::File::create(dir.join("node.log"))?;
        let mut cmd = Command::new(binary);
        cmd.arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data")
            .arg(dir.join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        for (k, v) in env {
            cmd.env(k, v);
        }
        pin::place(&mut cmd, cpus);
        if let Some(group) = cgroup {
            crate::cluster::place_in(&mut cmd, group);
        }
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                bail!("cannot start {}: {e}", binary.display());
            }
        };
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Keep reading so the node never blocks on a full pipe.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = listening_url(&line) {
                    let _ = tx.send(url);
                }
            }
        });
        let mut spawned = Spawned {
            child,
            dir,
            url: String::new(),
            killed: false,
        };
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => spawned.url = url,
            Err(_) => {
                let log = spawned.log_tail();
                bail!("the node did not start listening within 30 s; its log:\n{log}");
            }
        }
        Ok(spawned)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `kill -9` at once, and reap it (the folder stays until `stop` or drop).
    pub fn kill9(&mut self) {
        if !self.killed {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.killed = true;
        }
    }

    /// SIGTERM (after a SIGCONT: a paused node could not drain), then up to `within` for the
    /// node to drain and exit, SIGKILL after that; the folder stays until `stop` or drop.
    /// Returns the exit status's description. Blocks while it waits.
    pub fn terminate(&mut self, within: Duration) -> String {
        if self.killed {
            return "killed (SIGKILL)".to_string();
        }
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + within;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.to_string(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break format!("killed after {} s", within.as_secs());
                }
            }
        };
        self.killed = true;
        status
    }

    /// Sends `signal` (SIGSTOP, SIGCONT, ...) to the node.
    pub fn signal(&self, signal: libc::c_int) {
        if !self.killed {
            // SAFETY: signalling our own child by its pid; it is not reaped yet.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, signal);
            }
        }
    }

    /// The last lines the node logged.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("node.log")).unwrap_or_default();
        // A backtrace's frames say little: the error or panic line before them says what
        // happened, so it is kept whatever follows (a node that failed to start once in CI
        // showed only its last frames).
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("  ") && !l.trim_start().starts_with("at "))
            .collect();
        let cause = lines
            .iter()
            .position(|l| l.starts_with("Error") || l.contains("panicked at"));
        let tail = lines.len().saturating_sub(20);
        match cause {
            Some(c) if c < tail => format!("{}\n...\n{}", lines[c], lines[tail..].join("\n")),
            _ => lines[tail..].join("\n"),
        }
    }

    /// SIGTERM, up to 20 s for a clean stop, then SIGKILL; the folder is removed either way.
    /// Returns the exit status's description.
    pub fn stop(mut self) -> String {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> String {
        let status = self.terminate(Duration::from_secs(20));
        if crate::cluster::keep_run_folders() {
            eprintln!("node folder kept: {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
        status
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let kept = self.killed && crate::cluster::keep_run_folders();
        if self.dir.exists() && !kept {
            self.stop_inner();
        }
    }
}
