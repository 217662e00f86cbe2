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
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Result};
use serde::Serialize;

mod recorder;
mod render;

pub use recorder::Recorder;
pub use render::render;

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

#[cfg(test)]
mod tests;
