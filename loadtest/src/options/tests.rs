use std::path::PathBuf;

use clap::Parser;

use super::testing::cli;
use super::*;

#[test]
fn a_storm_opens_every_socket_at_once_and_excludes_a_ramp() {
    let o = merge(cli(&["--spawn", "--storm"]), FileConfig::default()).unwrap();
    assert!(o.storm);
    assert_eq!(o.ramp, STORM_RAMP);
    assert_eq!(crate::schedule::connect_at(2_000, o.ramp).as_millis(), 2);
    assert!(Cli::try_parse_from(["atrium-loadtest", "--storm", "--ramp", "10"]).is_err());
    let o = merge(cli(&["--spawn"]), FileConfig::default()).unwrap();
    assert!(!o.storm);
}

fn file(json: &str) -> FileConfig {
    serde_json::from_str(json).unwrap()
}

#[test]
fn defaults_fill_what_is_left_out() {
    let o = merge(cli(&["--spawn"]), FileConfig::default()).unwrap();
    assert_eq!(
        o.target,
        Target::Spawn {
            server: None,
            port: 0
        }
    );
    assert_eq!((o.users, o.files, o.pages), (200, 20, 2));
    assert_eq!((o.editors, o.edit_rate, o.presence_rate), (0.1, 2.0, 20.0));
    assert_eq!((o.warmup, o.duration), (3.0, 30.0));
}

#[test]
fn command_line_wins_over_config_file() {
    let f = file(
        r#"{"users": 500, "files": 5, "per_account": 3, "edit-rate": 4,
            "env": {"ATRIUM_ROOM_EDITORS": "50", "ATRIUM_PRESENCE_HZ": 10, "X": true}}"#,
    );
    let c = cli(&["--spawn", "--users", "40", "--env", "ATRIUM_PRESENCE_HZ=5"]);
    let o = merge(c, f).unwrap();
    assert_eq!(o.users, 40);
    assert_eq!(o.files, 5);
    assert_eq!(o.per_account, 3);
    assert_eq!(o.edit_rate, 4.0);
    assert_eq!(o.env["ATRIUM_ROOM_EDITORS"], "50");
    assert_eq!(o.env["ATRIUM_PRESENCE_HZ"], "5");
    assert_eq!(o.env["X"], "true");
    let f = file(r#"{"spawn": true, "html": "a.html", "profile": "prof"}"#);
    let o = merge(cli(&["--html", "b.html"]), f).unwrap();
    assert_eq!(o.html, Some(PathBuf::from("b.html")));
    assert_eq!(o.profile, Some(PathBuf::from("prof")));
}

#[test]
fn config_file_can_choose_the_target() {
    let o = merge(cli(&[]), file(r#"{"url": "http://127.0.0.1:9/"}"#)).unwrap();
    assert_eq!(o.target, Target::Url("http://127.0.0.1:9".into()));
    let o = merge(cli(&["--port", "4000"]), file(r#"{"spawn": true}"#)).unwrap();
    assert_eq!(
        o.target,
        Target::Spawn {
            server: None,
            port: 4000
        }
    );
}

#[test]
fn bad_options_are_refused_with_a_reason() {
    let err = |c: Cli, f: FileConfig| merge(c, f).unwrap_err().to_string();
    assert!(err(cli(&[]), FileConfig::default()).contains("--spawn"));
    assert!(err(
        cli(&["--spawn", "--url", "http://a:1"]),
        FileConfig::default()
    )
    .contains("not both"));
    assert!(err(cli(&["--spawn", "--editors", "2"]), FileConfig::default()).contains("--editors"));
    assert!(err(
        cli(&["--spawn", "--env", "NOEQUALS"]),
        FileConfig::default()
    )
    .contains("K=V"));
    assert!(err(cli(&["--url", "https://x:1"]), FileConfig::default()).contains("TLS"));
    assert!(err(
        cli(&["--spawn", "--users", "5", "--files", "6"]),
        FileConfig::default()
    )
    .contains("--files"));
    assert!(serde_json::from_str::<FileConfig>(r#"{"userz": 1}"#).is_err());
    assert!(err(
        cli(&["--url", "http://127.0.0.1:9", "--profile", "p"]),
        FileConfig::default()
    )
    .contains("--profile needs --spawn"));
}

#[test]
fn files_default_to_rooms_of_ten() {
    let o = merge(cli(&["--spawn", "--users", "1000"]), FileConfig::default()).unwrap();
    assert_eq!(o.files, 100);
    let o = merge(cli(&["--spawn", "--users", "5"]), FileConfig::default()).unwrap();
    assert_eq!(o.files, 1);
}

#[test]
fn pinning_takes_cpu_lists_and_only_for_servers_this_tool_starts() {
    let o = merge(
        cli(&["--spawn", "--pin-server", "0", "--pin-generator", "0"]),
        FileConfig::default(),
    )
    .unwrap();
    assert_eq!(o.pin_server.unwrap().to_string(), "0");
    assert_eq!(o.pin_generator.unwrap().to_string(), "0");
    // One CPU: one thread, unless told otherwise.
    assert_eq!(o.workers, 1);
    let o = merge(
        cli(&["--spawn"]),
        file(r#"{"pin-server": "0", "pin_generator": "0-0"}"#),
    )
    .unwrap();
    assert_eq!(o.pin_generator.unwrap().to_string(), "0");
    let refused = |args: &[&str]| {
        merge(cli(args), FileConfig::default())
            .unwrap_err()
            .to_string()
    };
    let e = refused(&["--spawn", "--pin-server", "1-0"]);
    assert!(e.contains("--pin-server") && e.contains("backwards"), "{e}");
    let e = refused(&["--spawn", "--pin-generator", "zero"]);
    assert!(e.contains("--pin-generator takes a CPU list"), "{e}");
    let e = refused(&["--spawn", "--pin-generator", "1023"]);
    assert!(e.contains("not one this tool may run on"), "{e}");
    let e = refused(&["--url", "http://127.0.0.1:1", "--pin-server", "0"]);
    assert!(e.contains("--pin-server needs --spawn"), "{e}");
}
