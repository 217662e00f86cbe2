//! `--spawn-cluster 3 --kill-node 3`: three debug nodes behind a debug router; the busiest node
//! is killed with SIGKILL in the measured window, and the report must show no acked patch lost,
//! every client converged, and a recovery time.
//!
//! With the test services (`scripts/services.sh start && source .services/env`) the cluster
//! uses their Postgres and NATS (a scratch database and namespace of its own); without them the
//! tool starts its own scratch Postgres and nats-server.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The workspace's debug binary `name` of package `package`, built first.
fn binary(package: &str, name: &str) -> PathBuf {
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

#[test]
fn a_killed_node_loses_no_acked_patch_and_clients_converge() {
    let json = std::env::temp_dir().join(format!(
        "atrium-loadtest-cluster-{}.json",
        std::process::id()
    ));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"));
    cmd.arg("--spawn-cluster")
        .arg("3")
        .arg("--server")
        .arg(binary("atrium-node", "atrium-node"))
        .arg("--router")
        .arg(binary("atrium-router", "atrium-router"))
        .args([
            "--kill-node",
            "3",
            "--users",
            "30",
            "--files",
            "6",
            "--duration",
            "8",
            "--warmup",
            "1",
            "--workers",
            "2",
            "--json",
        ])
        .arg(&json)
        .env_remove("ATRIUM_DATABASE_URL")
        .env_remove("ATRIUM_COORDINATOR");
    // The test services, when present, instead of servers of the tool's own.
    for (from, to) in [
        ("ATRIUM_TEST_DATABASE_URL", "ATRIUM_DATABASE_URL"),
        ("ATRIUM_TEST_NATS_URL", "ATRIUM_COORDINATOR"),
    ] {
        if let Ok(v) = std::env::var(from) {
            if !v.trim().is_empty() {
                cmd.env(to, v);
            }
        }
    }
    let out = cmd.output().expect("run atrium-loadtest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "atrium-loadtest failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let f = &report["failover"];
    assert!(f.is_object(), "no failover section:\n{stdout}");
    assert_eq!(f["acked_lost"], 0, "{f}\n{stdout}");
    assert_eq!(f["not_converged"], 0, "{f}\n{stdout}");
    assert!(f["recover_ms"].as_f64().is_some(), "{f}\n{stdout}");
    assert!(f["acked_checked"].as_u64().unwrap() > 0, "{f}");
    assert_eq!(f["clients_checked"], 30, "{f}");
    assert!(f["killed_node_rooms"].as_u64().unwrap() > 0, "{f}");
    assert!(f["reconnects"].as_u64().unwrap() > 0, "{f}");
    assert_eq!(report["cluster"]["nodes"].as_object().unwrap().len(), 3);
}
