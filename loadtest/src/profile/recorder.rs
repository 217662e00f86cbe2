//! Recording: `perf record` attached to the node while the window is open.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::*;

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
