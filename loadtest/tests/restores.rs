//! `--restore-every`: restores during the measured window, reported in the JSON, the text and
//! the HTML, while every client keeps a gapless, ordered stream of versions.

mod common;

use common::{run_to_end, small_spawned_run};

use serde_json::Value;

#[test]
fn restores_during_a_run_are_reported_and_clients_stay_in_order() {
    let json = std::env::temp_dir().join(format!(
        "atrium-loadtest-restores-{}.json",
        std::process::id()
    ));
    let html = json.with_extension("html");
    let stdout = run_to_end(
        small_spawned_run("20", "2", "1", "4")
            .args(["--editors", "0.5", "--restore-every", "0.5", "--json"])
            .arg(&json)
            .arg("--html")
            .arg(&html),
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);
    let x = &r["restores"];
    assert!(x["restored"].as_u64().unwrap() >= 3, "{x}");
    assert_eq!(x["failed"], 0, "{x}");
    assert!(x["restore_ms"]["p99"].as_f64().unwrap() > 0.0, "{x}");
    let p = &r["problems"];
    assert_eq!(p["dropped_patches"], 0, "{p}");
    assert_eq!(p["out_of_order"], 0, "{p}");
    assert!(stdout.contains("Restores (one every 0.5 s)"), "{stdout}");
    assert!(page.contains("<h2>Restores</h2>"));
}
