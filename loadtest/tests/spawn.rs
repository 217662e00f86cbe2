//! Runs the built tool against a spawned debug `atrium-node` with a small load and checks the
//! JSON report.

mod common;

use std::process::Command;

use common::{run_to_end, small_spawned_run};

use serde_json::Value;

#[test]
fn a_small_spawned_run_reports_every_measure() {
    let json = std::env::temp_dir().join(format!("atrium-loadtest-{}.json", std::process::id()));
    let html = json.with_extension("html");
    let stdout = run_to_end(
        small_spawned_run("40", "4", "1", "3")
            .args(["--label", "integration", "--json"])
            .arg(&json)
            .arg("--html")
            .arg(&html),
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);

    assert_eq!(r["label"], "integration");
    assert_eq!(r["connected"], 40);
    assert_eq!(r["editors"], 4);
    let count = |k: &str| r[k]["count"].as_u64().unwrap();
    assert!(count("patch_ack_ms") > 0, "{r}");
    assert!(count("patch_relay_ms") > 0, "{r}");
    assert!(count("presence_ms") > 0, "{r}");
    for k in ["patch_relay_ms", "patch_ack_ms", "presence_ms"] {
        let (p50, p99, max) = (
            r[k]["p50"].as_f64().unwrap(),
            r[k]["p99"].as_f64().unwrap(),
            r[k]["max"].as_f64().unwrap(),
        );
        assert!(
            0.0 < p50 && p50 <= p99 && p99 <= max && max < 5000.0,
            "{k}: {}",
            r[k]
        );
    }
    // 4 editors at 2/s, each patch to the 9 others in its file.
    let relays = r["rates"]["patches_received_per_s"].as_f64().unwrap();
    assert!((50.0..=90.0).contains(&relays), "relays a second: {relays}");
    assert!(r["rates"]["presence_received_per_s"].as_f64().unwrap() > 0.0);
    let p = &r["problems"];
    assert_eq!(p["dropped_patches"], 0, "{p}");
    assert_eq!(p["out_of_order"], 0, "{p}");
    assert_eq!(p["unexpected_closes"], serde_json::json!({}), "{p}");
    assert_eq!(p["connection_errors"], 0, "{p}");
    assert_eq!(p["joined_as_viewer"], 0, "{p}");
    assert!(
        r["server"]["cpu_cores"].as_f64().is_some(),
        "{}",
        r["server"]
    );
    assert!(r["server"]["cpu_us_per_message"].as_f64().unwrap() > 0.0);
    assert!(r["server"]["max_rss_mb"].as_f64().unwrap() > 0.0);
    assert_eq!(r["server"]["messages_counted_by"], "health");
    assert!(r["generator"]["sched_delay_max_ms"].as_f64().is_some());
    assert!(!r["memory"].as_array().unwrap().is_empty());
    assert!(stdout.contains("patch relay"), "{stdout}");

    // The generator must not be the bottleneck. Per message it spends about what the node
    // does or less; on a shared 2-core machine either side's figure can swing, so the
    // check is for a generator that costs far more (twice) than the node it measures.
    let server_us = r["server"]["cpu_us_per_message"].as_f64().unwrap();
    let generator_us = r["generator"]["cpu_us_per_message"].as_f64().unwrap();
    eprintln!("CPU µs per message: server {server_us}, generator {generator_us}");
    assert!(
        generator_us < 2.0 * server_us,
        "the generator used {generator_us} µs per message, the node {server_us}: {}",
        r["generator"]
    );

    // The HTML page: self-contained, with every plot and the run's numbers.
    assert!(page.starts_with("<!doctype html>"), "{}", &page[..100]);
    assert!(!page.contains("<script") && !page.contains("src="));
    assert_eq!(page.matches("<svg").count(), 8);
    assert!(page.matches("<polyline").count() >= 8);
    for text in [
        "atrium-loadtest: integration",
        "Latency p99",
        "Server memory",
        "CPU, % of one core",
    ] {
        assert!(page.contains(text), "{text}");
    }
    let seconds = r["seconds"].as_array().unwrap();
    assert!(seconds.len() >= 4, "{}", seconds.len());
    assert!(seconds
        .iter()
        .any(|s| s["phase"] == "measure" && s["generator_cpu_percent"].as_f64().is_some()));
}

#[test]
fn bad_options_exit_2_and_a_remote_url_needs_permission() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--spawn", "--editors", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--editors"));
    let out = run(&["--url", "http://192.0.2.1:80"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--i-have-permission"));
    let out = run(&["--url", "http://127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be reached"));
}
