//! `--pin-server` and `--pin-generator` on a spawned debug node with a tiny load: the report
//! says where each side ran, read back from the kernel, and gives CPU per delivered update.

mod common;

use std::process::Command;

use common::{run_to_end, small_spawned_run};
use serde_json::Value;

/// The CPUs this test may run on, from the kernel's `Cpus_allowed_list` (e.g. `0-1`).
fn my_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    list.split(',')
        .flat_map(|item| {
            let (a, b) = item.split_once('-').unwrap_or((item, item));
            a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()
        })
        .collect()
}

#[test]
fn the_server_and_the_generator_run_where_they_are_pinned() {
    let cpus = my_cpus();
    // Two CPUs apart when there are two; on one, both share it.
    let (server, generator) = (cpus[cpus.len() - 1].to_string(), cpus[0].to_string());
    let json =
        std::env::temp_dir().join(format!("atrium-loadtest-pin-{}.json", std::process::id()));
    let stdout = run_to_end(
        small_spawned_run("20", "2", "1", "2")
            .args(["--pin-server", &server, "--pin-generator", &generator])
            .arg("--json")
            .arg(&json),
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let (s, g) = (&r["server"], &r["generator"]);

    // The pinning asked for, and what the kernel says each process was allowed.
    assert_eq!(s["pinned_to"], server.as_str(), "{s}");
    assert_eq!(s["cpus_allowed"], server.as_str(), "{s}");
    assert_eq!(g["pinned_to"], generator.as_str(), "{g}");
    assert_eq!(g["cpus_allowed"], generator.as_str(), "{g}");
    assert_eq!(g["usable_cores"], 1.0, "{g}");
    assert!(stdout.contains(&format!("pinned to CPUs {server} (allowed: {server})")));

    // 20 people in files of 10, each moving a cursor: every presence entry reaches the others.
    for section in [s, g] {
        let delivered = section["delivered_updates_per_second"].as_f64().unwrap();
        let cpu = section["cpu_us_per_delivered_update"].as_f64().unwrap();
        assert!(delivered > 0.0 && cpu > 0.0, "{section}");
    }
    assert!(g["generator_limited"].is_boolean(), "{g}");
    assert_eq!(
        g["generator_limited"].as_bool().unwrap(),
        stdout.contains("was the limit"),
        "{stdout}"
    );
    assert!(stdout.contains("µs per delivered update"), "{stdout}");
}

#[test]
fn a_bad_cpu_list_exits_2_with_the_reason() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--spawn", "--pin-server", "1-0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--pin-server takes a CPU list"), "{err}");
    let out = run(&["--spawn", "--pin-generator", "1000"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not one this tool may run on"), "{err}");
}
