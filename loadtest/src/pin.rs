//! Pinning to CPUs (`--pin-server`, `--pin-generator`): the node(s) and router on some cores,
//! the generator on others, so each side's CPU per delivered update is its own and one can
//! tell which of the two ran out of core.
//!
//! Everything goes through `sched_setaffinity`: for a spawned process in the child between fork
//! and exec (no `taskset` needed), for the generator on every thread of its own process before
//! the runtime starts (threads started later inherit it).

use std::fmt;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{bail, Result};

#[cfg(test)]
mod tests;

/// The kernel's fixed-size CPU mask holds this many CPUs.
const MOST_CPUS: usize = libc::CPU_SETSIZE as usize;

/// A set of CPUs, as `taskset -c` and `/proc/<pid>/status`'s `Cpus_allowed_list` write it:
/// `1`, `0-1`, `0,2-3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

impl CpuList {
    /// Parses a CPU list; `option` names where it came from in the error.
    pub fn parse(option: &str, text: &str) -> Result<CpuList> {
        let bad = |why: String| -> Result<CpuList> {
            bail!("{option} takes a CPU list such as 1, 0-1 or 0,2-3 ({why}), got {text:?}")
        };
        let mut cpus = Vec::new();
        for item in text.split(',').map(str::trim) {
            let (low, high) = item.split_once('-').unwrap_or((item, item));
            let (Ok(low), Ok(high)) = (low.trim().parse::<usize>(), high.trim().parse::<usize>())
            else {
                return bad(format!("{item:?} is not a CPU or a range"));
            };
            if low > high {
                return bad(format!("the range {item} runs backwards"));
            }
            if high >= MOST_CPUS {
                return bad(format!("CPUs are numbered below {MOST_CPUS}"));
            }
            cpus.extend(low..=high);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList(cpus))
    }

    /// How many CPUs (never none: an empty list does not parse).
    pub fn count(&self) -> usize {
        self.0.len()
    }

    /// Refuses a list with a CPU this process may not run on: the kernel would refuse it
    /// (or ignore that CPU), and the run would not be placed as asked.
    pub fn within(&self, option: &str, allowed: &CpuList) -> Result<()> {
        if let Some(cpu) = self.0.iter().find(|c| !allowed.0.contains(c)) {
            bail!(
                "{option} {self}: CPU {cpu} is not one this tool may run on (it may use {allowed})"
            );
        }
        Ok(())
    }

    fn mask(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain bits; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in &self.0 {
            // SAFETY: every CPU is below CPU_SETSIZE (checked when parsed).
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        set
    }

    fn from_mask(set: &libc::cpu_set_t) -> CpuList {
        // SAFETY: reading bits below CPU_SETSIZE of a valid set.
        CpuList(
            (0..MOST_CPUS)
                .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
                .collect(),
        )
    }
}

impl fmt::Display for CpuList {
    /// The compact form, runs written as ranges: `0-1,3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &cpu in &self.0 {
            match runs.last_mut() {
                Some((_, end)) if *end + 1 == cpu => *end = cpu,
                _ => runs.push((cpu, cpu)),
            }
        }
        for (i, (start, end)) in runs.into_iter().enumerate() {
            let comma = if i > 0 { "," } else { "" };
            if start == end {
                write!(f, "{comma}{start}")?;
            } else {
                write!(f, "{comma}{start}-{end}")?;
            }
        }
        Ok(())
    }
}

/// The CPUs thread (or process) `tid` may run on; 0 is the calling thread.
fn affinity(tid: libc::pid_t) -> io::Result<CpuList> {
    // SAFETY: zeroed is the empty set; the call writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: a valid set of the size given.
    if unsafe { libc::sched_getaffinity(tid, size, &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(CpuList::from_mask(&set))
}

fn set_affinity(tid: libc::pid_t, set: &libc::cpu_set_t) -> io::Result<()> {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: a valid set of the size given; async-signal-safe (one system call), so it may
    // also run between fork and exec.
    if unsafe { libc::sched_setaffinity(tid, size, set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs this tool was started on, before any pinning of its own.
static STARTED_ON: OnceLock<Option<CpuList>> = OnceLock::new();

/// The CPUs this tool was started on (taken the first time this is asked: main asks before it
/// pins anything). None where the kernel would not say.
pub fn started_on() -> Option<&'static CpuList> {
    STARTED_ON.get_or_init(|| affinity(0).ok()).as_ref()
}

/// Pins every thread of this process to `cpus`; threads started afterwards inherit it.
pub fn pin_generator(cpus: &CpuList) -> Result<()> {
    started_on();
    let set = cpus.mask();
    let tasks = std::fs::read_dir("/proc/self/task")?;
    for task in tasks {
        let name = task?.file_name();
        let Some(tid) = name.to_str().and_then(|t| t.parse::<libc::pid_t>().ok()) else {
            continue;
        };
        match set_affinity(tid, &set) {
            Ok(()) => {}
            // A thread that ended since the folder was read.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => bail!("--pin-generator {cpus}: cannot pin thread {tid}: {e}"),
        }
    }
    Ok(())
}

/// Places a process this tool starts: on `cpus` when given (the node and the router under
/// `--pin-server`), else back on the CPUs the tool was started on, so a child never inherits
/// the generator's own pinning.
pub fn place(cmd: &mut Command, cpus: Option<&CpuList>) {
    let (set, must) = match (cpus, started_on()) {
        (Some(cpus), _) => (cpus.mask(), true),
        (None, Some(started)) => (started.mask(), false),
        (None, None) => return,
    };
    // SAFETY: the closure makes one async-signal-safe system call on a mask built before the
    // fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || match set_affinity(0, &set) {
            Err(e) if must => Err(e),
            _ => Ok(()),
        });
    }
}

/// The CPUs process `pid` may run on, from `/proc/<pid>/status`.
pub fn allowed_for(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    allowed_from_status(&status)
}

/// `Cpus_allowed_list` from the text of `/proc/<pid>/status`.
pub fn allowed_from_status(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}
