//! `--profile DIR`: a CPU profile of the spawned node over the measured window.
//!
//! Linux `perf record -F 99 --call-graph dwarf -p <pid>` samples the node while the window is
//! open; afterwards `perf script` turns the samples into text, which the `inferno` crate folds
//! into one line per distinct stack (`stacks.folded`) and draws as a flame graph
//! (`flamegraph.svg`). The raw `perf.data` stays next to them for `perf report`.
//!
//! Stacks are unwound from DWARF by default: Rust builds, and the standard library that ships
//! with them, leave out frame pointers, so `-g` (frame pointers) gives stacks cut after a frame
//! or two. `--profile-call-graph fp` is cheaper for a node built with
//! `RUSTFLAGS="-C force-frame-pointers=yes"`.
//!
//! perf is not available everywhere (containers and some virtual machines refuse
//! `perf_event_open`, and `kernel.perf_event_paranoid` may forbid sampling another process), so
//! [`check`] tries it before anything else runs and names what is missing.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use inferno::collapse::perf::{Folder, Options as FoldOptions};
use inferno::collapse::Collapse;
use inferno::flamegraph::{self, Palette};
use serde::Serialize;

/// Names another perf binary (tests use it to stand for a machine without perf).
pub const PERF_ENV: &str = "ATRIUM_LOADTEST_PERF";

/// Sampling frequency, Hz: off the beat of the node's 10 ms and 50 ms timers.
pub const FREQUENCY_HZ: u32 = 99;

pub const PERF_DATA: &str = "perf.data";
pub const FOLDED: &str = "stacks.folded";
pub const FLAMEGRAPH: &str = "flamegraph.svg";
const RECORD_LOG: &str = "perf-record.log";

/// What `--profile` produced, for the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProfileReport {
    pub dir: PathBuf,
    pub perf_data: Option<PathBuf>,
    pub folded: Option<PathBuf>,
    pub flamegraph_svg: Option<PathBuf>,
    /// Samples drawn in the flame graph.
    pub samples: u64,
    /// Distinct stacks.
    pub stacks: usize,
    pub frequency_hz: u32,
    /// perf's `--call-graph` mode.
    pub call_graph: String,
    /// Seconds perf was recording.
    pub recorded_s: f64,
    /// Why there is no flame graph, when there is none.
    pub error: Option<String>,
}

/// The perf binary: `$ATRIUM_LOADTEST_PERF`, else `perf` on PATH.
pub fn perf_binary() -> PathBuf {
    std::env::var_os(PERF_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("perf"), PathBuf::from)
}

/// Checks that perf runs here and may count another process (this one): the same kernel
/// interface `perf record -p` needs. The error says what is missing and how to get it.
pub fn check(perf: &Path) -> Result<()> {
    let out = Command::new(perf)
        .args(["stat", "-e", "task-clock", "-p"])
        .arg(std::process::id().to_string())
        .args(["--", "true"])
        .stdin(Stdio::null())
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => bail!(
            "--profile needs Linux perf, and {} cannot be run ({e}). Install it (Debian: \
             apt-get install linux-perf) or name it with {PERF_ENV}=PATH",
            perf.display()
        ),
    };
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(6)
        .collect();
    bail!(
        "--profile needs perf events (the perf_event_open system call) for another process, \
         and this machine refuses them: `{} stat -e task-clock -p PID` failed ({}): {}. \
         Containers and some virtual machines do not offer perf events at all; elsewhere, \
         allow them with `sysctl kernel.perf_event_paranoid=1` (or run as root)",
        perf.display(),
        out.status,
        said.join(" | ")
    )
}

/// A running `perf record` attached to the node.
pub struct Recorder {
    child: Option<Child>,
    dir: PathBuf,
    started: Instant,
}

impl Recorder {
    /// Starts sampling `pid` into `dir/perf.data` (the folder is created), unwinding stacks
    /// with `call_graph` (`dwarf`, `fp`, ...).
    pub fn start(perf: &Path, pid: u32, dir: &Path, call_graph: &str) -> Result<Recorder> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create --profile {}", dir.display()))?;
        let log = std::fs::File::create(dir.join(RECORD_LOG))
            .with_context(|| format!("cannot write in --profile {}", dir.display()))?;
        let child = Command::new(perf)
            .arg("record")
            .args(["-F", &FREQUENCY_HZ.to_string(), "--call-graph", call_graph])
            .args(["-p", &pid.to_string()])
            .arg("-o")
            .arg(dir.join(PERF_DATA))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start {} record", perf.display()))?;
        Ok(Recorder {
            child: Some(child),
            dir: dir.to_path_buf(),
            started: Instant::now(),
        })
    }

    /// Stops perf (SIGINT, as Ctrl-C would; SIGKILL if it has not written its file within
    /// 30 s) and returns how long it recorded.
    pub fn stop(mut self) -> Result<f64> {
        let recorded = self.started.elapsed().as_secs_f64();
        let Some(mut child) = self.child.take() else {
            bail!("perf record was already stopped");
        };
        // SAFETY: signalling our own child by its pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGINT);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            match child.try_wait()? {
                Some(status) => break status,
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                None => {
                    let _ = child.kill();
                    let _ = child.wait();
                    bail!("perf record did not stop within 30 s of SIGINT");
                }
            }
        };
        // perf writes its file on SIGINT, then exits 0 or 130, or dies of the SIGINT it
        // raises again.
        let fine =
            status.success() || status.code() == Some(130) || status.signal() == Some(libc::SIGINT);
        let data = self.dir.join(PERF_DATA);
        let size = std::fs::metadata(&data).map_or(0, |m| m.len());
        if !fine || size == 0 {
            let log = std::fs::read_to_string(self.dir.join(RECORD_LOG)).unwrap_or_default();
            bail!("perf record failed ({status}): {}", log.trim());
        }
        Ok(recorded)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Reads `dir/perf.data` with `perf script`, and writes the folded stacks and the flame graph.
pub fn render(perf: &Path, recorded: ProfileReport, title: &str) -> ProfileReport {
    let dir = recorded.dir.clone();
    let dir = dir.as_path();
    let mut report = ProfileReport {
        perf_data: Some(dir.join(PERF_DATA)),
        recorded_s: crate::measure::round3(recorded.recorded_s),
        ..recorded
    };
    if let Err(e) = render_inner(perf, dir, title, &mut report) {
        report.error = Some(format!("{e:#}"));
    }
    report
}

fn render_inner(perf: &Path, dir: &Path, title: &str, report: &mut ProfileReport) -> Result<()> {
    // Without a period column every sample counts 1; without inlined frames perf does not ask
    // addr2line about every address (seconds instead of minutes on a debug build).
    let out = Command::new(perf)
        .args([
            "script",
            "--no-inline",
            "-F",
            "comm,tid,time,event,ip,sym,dso",
        ])
        .arg("-i")
        .arg(dir.join(PERF_DATA))
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .with_context(|| format!("cannot run {} script", perf.display()))?;
    if !out.status.success() {
        bail!(
            "perf script failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let folded = fold(&out.stdout)?;
    let (samples, stacks) = count(&folded);
    std::fs::write(dir.join(FOLDED), &folded)?;
    report.folded = Some(dir.join(FOLDED));
    report.samples = samples;
    report.stacks = stacks;
    if samples == 0 {
        bail!("perf recorded no samples of the node (was it idle, or did perf lose access?)");
    }
    let subtitle = format!(
        "{samples} samples at {FREQUENCY_HZ} Hz over {:.1} s",
        report.recorded_s
    );
    let svg = draw(&folded, title, &subtitle)?;
    let mut file = std::fs::File::create(dir.join(FLAMEGRAPH))?;
    file.write_all(&svg)?;
    report.flamegraph_svg = Some(dir.join(FLAMEGRAPH));
    Ok(())
}

/// Folds `perf script` output into `stack;frames;leaf count` lines.
pub fn fold(perf_script: &[u8]) -> Result<String> {
    let mut options = FoldOptions::default();
    options.nthreads = 1;
    let mut folder = Folder::from(options);
    let mut out = Vec::new();
    folder
        .collapse(perf_script, &mut out)
        .context("cannot fold perf script output")?;
    String::from_utf8(out).map_err(|e| anyhow!("folded stacks are not UTF-8: {e}"))
}

/// (samples, distinct stacks) of folded lines.
pub fn count(folded: &str) -> (u64, usize) {
    let mut samples = 0;
    let mut stacks = 0;
    for line in folded.lines() {
        if let Some(n) = line
            .rsplit_once(' ')
            .and_then(|(_, n)| n.trim().parse::<u64>().ok())
        {
            samples += n;
            stacks += 1;
        }
    }
    (samples, stacks)
}

/// Draws folded stacks as a flame graph SVG (it carries its own small script for zoom and
/// search, so it works opened on its own in a browser).
pub fn draw(folded: &str, title: &str, subtitle: &str) -> Result<Vec<u8>> {
    let mut options = flamegraph::Options::default();
    options.title = title.to_string();
    options.subtitle = Some(subtitle.to_string());
    options.colors = "rust".parse::<Palette>().unwrap_or_default();
    options.count_name = "samples".to_string();
    options.deterministic = true;
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut options, folded.lines(), &mut svg)
        .context("cannot draw the flame graph")?;
    Ok(svg)
}

#[cfg(test)]
mod tests;
