//! What the tool's whole-binary tests share.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's debug binary `name` of package `package`, built (or brought up to date)
/// first; an existing one is used when the build cannot run.
pub fn workspace_binary(package: &str, name: &str) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let path = target.join("debug").join(name);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-q", "-p", package, "--bin", name])
        .current_dir(workspace)
        .status();
    match status {
        Ok(s) if s.success() => {}
        other => assert!(path.is_file(), "cannot build {name} ({other:?})"),
    }
    path
}

/// The debug `atrium-node`.
#[allow(dead_code)] // not every test file spawns a node
pub fn node_binary() -> PathBuf {
    workspace_binary("atrium-node", "atrium-node")
}

/// The tool on a spawned debug node with a small load: `users` in `files`, measured for
/// `duration` seconds after `warmup`.
#[allow(dead_code)] // not every test file spawns a node
pub fn small_spawned_run(users: &str, files: &str, warmup: &str, duration: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"));
    cmd.arg("--spawn").arg("--server").arg(node_binary()).args([
        "--users",
        users,
        "--files",
        files,
        "--warmup",
        warmup,
        "--duration",
        duration,
    ]);
    cmd
}

/// Runs the tool to its end and fails the test, with everything it printed, unless it
/// succeeded; its standard output.
#[allow(dead_code)] // not every test file runs the tool to its end
pub fn run_to_end(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run atrium-loadtest");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    stdout
}
