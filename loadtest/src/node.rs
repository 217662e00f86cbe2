//! The node under load: spawning a scratch one, asking `/health`, and reading a spawned
//! node's CPU and memory from /proc.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use crate::http::{request, Endpoint};
use crate::options::Options;

/// The settings a spawned node gets unless `--env` or the config file says otherwise: statistics
/// on, and the per-address, per-account, sign-up and file-creation limits raised, since every
/// generated socket and sign-up comes from one address and one owner makes every file.
pub fn spawn_env(o: &Options) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    set("ATRIUM_HEALTH_STATS", "1".into());
    set("ATRIUM_WS_PER_IP", "1000000".into());
    set("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND", "0".into());
    set("ATRIUM_WS_PER_ACCOUNT", o.per_account.max(10).to_string());
    set("ATRIUM_AUTH_PER_IP_PER_MINUTE", "1000000".into());
    set("ATRIUM_AUTH_PER_EMAIL_PER_MINUTE", "1000000".into());
    // One owner makes every file of the run.
    set("ATRIUM_FILES_PER_ACCOUNT", "1000000".into());
    set("ATRIUM_FILE_CREATES_PER_MINUTE", "1000000".into());
    for (k, v) in &o.env {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}

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
    /// `env`, and waits (up to 30 s) for it to say where it listens.
    pub fn start(binary: &Path, port: u16, env: &[(String, String)]) -> Result<Spawned> {
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
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// SIGTERM, up to 20 s for a clean stop, then SIGKILL; the folder is removed either way.
    /// Returns the exit status's description.
    pub fn stop(mut self) -> String {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> String {
        let status = self.terminate(Duration::from_secs(20));
        let _ = std::fs::remove_dir_all(&self.dir);
        status
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if self.dir.exists() {
            self.stop_inner();
        }
    }
}

/// `atrium-node <id> listening on http://127.0.0.1:PORT` → the URL.
pub fn listening_url(line: &str) -> Option<String> {
    let (_, url) = line.split_once(" listening on ")?;
    let url = url.trim();
    url.starts_with("http://").then(|| url.to_string())
}

/// The node binary: the one given, else `atrium-node` next to this tool, else on PATH.
pub fn find_binary(given: Option<&Path>) -> PathBuf {
    if let Some(path) = given {
        return path.to_path_buf();
    }
    if let Ok(me) = std::env::current_exe() {
        if let Some(dir) = me.parent() {
            let beside = dir.join("atrium-node");
            if beside.is_file() {
                return beside;
            }
        }
    }
    PathBuf::from("atrium-node")
}

/// Raises this process's open-file limit to its hard limit (a spawned node inherits it).
/// Returns the soft limit in force.
pub fn raise_nofile() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    lim.rlim_cur
}

/// User plus system CPU seconds from the text of /proc/<pid>/stat.
pub fn cpu_seconds_from_stat(stat: &str) -> Option<f64> {
    // The command name (field 2) may hold spaces; the fields after its ')' start at field 3.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as f64 } else { 100.0 };
    Some((utime + stime) / ticks)
}

/// User plus system CPU seconds of process `pid`, to the nanosecond, from its CPU-time clock
/// (`clock_getcpuclockid`). /proc/<pid>/stat counts in clock ticks, too coarse for short windows.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let mut clock: libc::clockid_t = 0;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both calls only write the local values they are given.
    unsafe {
        if libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) != 0
            || libc::clock_gettime(clock, &mut ts) != 0
        {
            return None;
        }
    }
    Some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// (resident, peak resident) bytes from the text of /proc/<pid>/status.
pub fn rss_from_status(status: &str) -> (Option<u64>, Option<u64>) {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// `/health`'s statistics (present with ATRIUM_HEALTH_STATS=1).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Stats {
    pub cpu_seconds: f64,
    pub rss_bytes: u64,
    pub connections: u64,
    pub rooms: u64,
    pub people: u64,
    pub editors: u64,
    #[serde(default)]
    pub scheduling_delay_p99_ms: f64,
    pub messages_in: u64,
    pub messages_out: u64,
}

/// One look at the server.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Whether /health answered 200 in time.
    pub up: bool,
    pub stats: Option<Stats>,
    pub cpu_seconds: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
}

/// Asks `/health`, within `timeout`.
pub async fn health(endpoint: &Endpoint, timeout: Duration) -> Result<Option<Stats>> {
    let answer = request(endpoint, "GET", "/health", None, None, timeout).await?;
    let body = answer.ok("GET /health")?;
    if body["ok"] != serde_json::Value::Bool(true) {
        return Err(anyhow!("GET /health: not ok: {body}"));
    }
    Ok(body
        .get("stats")
        .and_then(|s| serde_json::from_value(s.clone()).ok()))
}

/// Samples the server: /health, plus /proc when we know its pid.
pub async fn sample(endpoint: &Endpoint, pid: Option<u32>) -> Sample {
    let health = health(endpoint, Duration::from_millis(900)).await;
    let mut s = Sample {
        up: health.is_ok(),
        stats: health.ok().flatten(),
        ..Sample::default()
    };
    if let Some(pid) = pid {
        s.cpu_seconds = process_cpu_seconds(pid).or_else(|| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|t| cpu_seconds_from_stat(&t))
        });
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            (s.rss_bytes, s.peak_rss_bytes) = rss_from_status(&status);
        }
    }
    if let Some(stats) = &s.stats {
        s.cpu_seconds = s.cpu_seconds.or(Some(stats.cpu_seconds));
        s.rss_bytes = s.rss_bytes.or(Some(stats.rss_bytes));
    }
    s
}

/// Whether a URL's host is on this machine (loopback).
pub async fn is_loopback(authority: &str) -> Result<bool> {
    let addrs: Vec<_> = tokio::net::lookup_host(authority)
        .await
        .with_context(|| format!("cannot resolve {authority}"))?
        .collect();
    Ok(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()))
}

#[cfg(test)]
mod tests;
