//! The tool minting app tokens for its simulated people (`--jwt-secret`, `--jwt-key`)
//! against a spawned node: no sign-ups, and every person joins with the role its token
//! grants.

mod common;

use common::{run_to_end, small_spawned_run};
use serde_json::Value;

fn report(extra: &[&str]) -> Value {
    let json = std::env::temp_dir().join(format!(
        "atrium-loadtest-jwt-{}-{}.json",
        std::process::id(),
        extra.len()
    ));
    run_to_end(
        small_spawned_run("20", "2", "1", "2")
            .args(["--accounts", "5", "--per-account", "4", "--json"])
            .arg(&json)
            .args(extra),
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    r
}

fn assert_clean(r: &Value) {
    assert_eq!(r["connected"], 20, "{r}");
    let p = &r["problems"];
    assert_eq!(p["connection_errors"], 0, "{p}");
    assert_eq!(p["unexpected_closes"], serde_json::json!({}), "{p}");
    assert_eq!(p["joined_as_viewer"], 0, "{p}");
    assert_eq!(p["dropped_patches"], 0, "{p}");
    assert!(r["patch_ack_ms"]["count"].as_u64().unwrap() > 0, "{r}");
}

#[test]
fn a_run_with_hs256_app_tokens_needs_no_sign_ups() {
    let r = report(&[
        "--jwt-secret",
        "a load-test secret of thirty-two bytes or more",
    ]);
    assert_clean(&r);
}

#[test]
fn a_run_with_an_ed25519_key_file() {
    let pair = atrium_testkit::jwt::key_pair(atrium_testkit::jwt::Algorithm::EdDSA, "load");
    let private = pair.public_path.with_file_name("private.pem");
    let keys = format!(
        "ATRIUM_APP_TOKEN_PUBLIC_KEYS={}",
        pair.public_path.display()
    );
    let r = report(&[
        "--jwt-key",
        private.to_str().unwrap(),
        "--env",
        "ATRIUM_APP_TOKEN_ISSUER=atrium-loadtest",
        "--env",
        "ATRIUM_APP_TOKEN_AUDIENCE=atrium",
        "--env",
        &keys,
    ]);
    assert_clean(&r);
}
