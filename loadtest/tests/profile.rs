//! `--profile DIR`: a flame graph of the spawned node's CPU over the measured window.
//!
//! A small spawned run checks the files it leaves; it needs Linux perf able to sample another
//! process (scripts/test.sh installs linux-perf) and fails without it. The folding and drawing
//! are also tested on a recorded `perf script` sample in the unit tests (`src/profile.rs`,
//! `tests/data/`), and the refusal (no perf, or perf refused the events) with a fake perf.

mod common;

use std::path::Path;
use std::process::Command;

use common::{run_to_end, small_spawned_run};

/// Whether perf can count another process here (what `--profile` checks too).
fn perf_works() -> bool {
    Command::new("perf")
        .args(["stat", "-e", "task-clock", "-p"])
        .arg(std::process::id().to_string())
        .args(["--", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn without_perf_profile_exits_2_naming_what_is_missing() {
    let out = Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"))
        .args(["--spawn", "--profile", "/nonexistent/profile"])
        .env("ATRIUM_LOADTEST_PERF", "/nonexistent/perf")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--profile needs Linux perf"), "{stderr}");
    // A perf that runs but is refused the events, as in a container.
    let fake = std::env::temp_dir().join(format!("atrium-loadtest-noperf-{}", std::process::id()));
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'Error: No permission to enable task-clock event.' >&2\nexit 255\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"))
            .args(["--spawn", "--profile", "/nonexistent/profile"])
            .env("ATRIUM_LOADTEST_PERF", &fake)
            .output()
            .unwrap()
    };
    let mut out = run();
    // A process forked by another test at the moment the script was written may still hold it
    // open for writing for an instant ("Text file busy"): try again.
    for _ in 0..20 {
        if !String::from_utf8_lossy(&out.stderr).contains("Text file busy") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        out = run();
    }
    let _ = std::fs::remove_file(&fake);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("perf_event_open"), "{stderr}");
    assert!(stderr.contains("No permission to enable"), "{stderr}");
    assert!(!Path::new("/nonexistent/profile").exists());
    // Only a spawned node can be profiled.
    let out = Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"))
        .args(["--url", "http://127.0.0.1:1", "--profile", "p"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--profile needs --spawn"));
}

#[test]
fn a_spawned_run_leaves_a_flame_graph_and_the_raw_profile() {
    // The suite installs Linux perf (scripts/test.sh); without it this test fails rather
    // than passing unchecked.
    assert!(
        perf_works(),
        "perf cannot sample another process here: install Debian's linux-perf (scripts/test.sh \
         does) and allow perf_event_open"
    );
    let dir = std::env::temp_dir().join(format!("atrium-loadtest-profile-{}", std::process::id()));
    let json = dir.with_extension("json");
    let stdout = run_to_end(
        small_spawned_run("20", "2", "0.5", "2")
            .arg("--profile")
            .arg(&dir)
            .arg("--json")
            .arg(&json),
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let p = &r["profile"];
    assert!(p["error"].is_null(), "{p}");
    assert!(p["samples"].as_u64().unwrap() > 0, "{p}");
    assert!(p["recorded_s"].as_f64().unwrap() >= 1.5, "{p}");
    let svg = std::fs::read_to_string(dir.join("flamegraph.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("atrium-node CPU"),
        "{}",
        &svg[..200]
    );
    let folded = std::fs::read_to_string(dir.join("stacks.folded")).unwrap();
    assert!(!folded.trim().is_empty());
    assert!(std::fs::metadata(dir.join("perf.data")).unwrap().len() > 0);
    assert!(stdout.contains("flame graph"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
