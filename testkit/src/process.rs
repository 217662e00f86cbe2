//! Spawned binaries whose output is kept per test, and printed when the test fails.

mod wait;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

/// A child process with its stdout and stderr collected into one log. Dropped, it
/// is killed; dropped while the test panics, its log is printed first.
pub struct Proc {
    pub name: String,
    child: Child,
    log: Arc<Mutex<String>>,
    exited: Option<ExitStatus>,
    /// The threads copying its stdout and stderr into `log`.
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Proc {
    /// Spawns `cmd` (stdin closed, output kept); panics naming `name` if it cannot start.
    pub fn spawn(name: &str, mut cmd: Command) -> Proc {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let log = Arc::new(Mutex::new(String::new()));
        let stdout = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let stderr = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let mut readers = Vec::new();
        for pipe in [stdout, stderr].into_iter().flatten() {
            let log = log.clone();
            readers.push(std::thread::spawn(move || {
                let mut reader = BufReader::new(pipe);
                let mut line = Vec::new();
                while let Ok(n) = reader.read_until(b'\n', &mut line) {
                    if n == 0 {
                        break;
                    }
                    let text = String::from_utf8_lossy(&line);
                    log.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push_str(&text);
                    line.clear();
                }
            }));
        }
        Proc {
            name: name.to_string(),
            child,
            log,
            exited: None,
            readers,
        }
    }

    /// Everything the process printed so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// How it ended, once it was killed or seen to exit.
    pub fn exited(&self) -> Option<ExitStatus> {
        self.exited
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.exited.is_none() && self.try_exit().is_none()
    }

    fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            self.exited = self.child.wait().ok();
        }
    }

    pub fn sigterm(&self) {
        self.signal(libc::SIGTERM);
    }

    /// Sends `sig` (SIGTERM, SIGSTOP, SIGCONT...), failing the test if it cannot be sent.
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: a plain syscall on the pid of our own child.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig}) failed", self.pid());
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            // Its last lines may still be in the pipes: the readers end at their close.
            for reader in self.readers.drain(..) {
                let _ = reader.join();
            }
            eprintln!(
                "----- {} -----\n{}\n----- end of {} -----",
                self.name,
                self.log(),
                self.name
            );
        }
    }
}

#[cfg(test)]
mod tests;

/// Resident memory of process `pid` (`VmRSS`), in KiB.
pub fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/<pid>/status")
}
