//! `--server-patches-per-s`: patches from the app's server during the measured window (the
//! spawned node's server admin makes the API key), their latency reported in the JSON, the
//! text and the HTML, while every client keeps a gapless, ordered stream of versions.

mod common;

use common::{run_to_end, small_spawned_run};

use serde_json::Value;

#[test]
fn server_patches_during_a_run_are_reported_and_clients_stay_in_order() {
    let json = std::env::temp_dir().join(format!(
        "atrium-loadtest-server-patches-{}.json",
        std::process::id()
    ));
    let html = json.with_extension("html");
    let stdout = run_to_end(
        small_spawned_run("20", "2", "1", "4")
            .args(["--editors", "0.5", "--server-patches-per-s", "20", "--json"])
            .arg(&json)
            .arg("--html")
            .arg(&html),
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);
    let x = &r["server_patches"];
    // 20 a second for the 4 s window: most of 80 (the first tick comes at once).
    assert!(x["applied"].as_u64().unwrap() >= 40, "{x}");
    assert_eq!(x["failed"], 0, "{x}");
    assert_eq!(x["per_s"], 20.0, "{x}");
    let l = &x["latency_ms"];
    assert!(l["p99"].as_f64().unwrap() > 0.0, "{x}");
    assert_eq!(l["count"], x["applied"], "{x}");
    let p = &r["problems"];
    assert_eq!(p["dropped_patches"], 0, "{p}");
    assert_eq!(p["out_of_order"], 0, "{p}");
    assert!(stdout.contains("Server patches (20 a second)"), "{stdout}");
    assert!(page.contains("<h2>Server patches</h2>"));
}

#[test]
fn server_patches_against_a_running_node_need_a_key() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"))
        .args(["--url", "http://127.0.0.1:9", "--server-patches-per-s", "5"])
        .env_remove("ATRIUM_LOADTEST_API_KEY")
        .output()
        .expect("run the load tool");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--api-key"), "{err}");
}
