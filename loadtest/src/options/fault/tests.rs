use super::*;
use crate::options::testing::cli;
use crate::options::{merge, FileConfig, Target};

fn file(json: &str) -> FileConfig {
    serde_json::from_str(json).unwrap()
}

#[test]
fn cluster_options_are_checked() {
    let o = merge(
        cli(&[
            "--spawn-cluster",
            "3",
            "--kill-node",
            "2",
            "--duration",
            "5",
        ]),
        FileConfig::default(),
    )
    .unwrap();
    assert!(matches!(o.target, Target::Cluster { nodes: 3, .. }));
    assert_eq!(
        o.fault,
        Some(Fault {
            kind: FaultKind::Kill,
            at: 2.0,
            hold_ms: None
        })
    );
    let o = merge(
        cli(&[
            "--spawn-cluster",
            "3",
            "--fault",
            "store",
            "--duration",
            "8",
        ]),
        FileConfig::default(),
    )
    .unwrap();
    assert_eq!(
        o.fault.map(|f| (f.kind, f.at)),
        Some((FaultKind::Store, 2.0))
    );
    let f = file(r#"{"spawn-cluster": 1, "fault": "router", "fault-for": 500}"#);
    let o = merge(cli(&[]), f).unwrap();
    assert_eq!(o.fault.and_then(|f| f.hold_ms), Some(500));
    let err = |c: Cli| merge(c, FileConfig::default()).unwrap_err().to_string();
    assert!(err(cli(&["--spawn", "--kill-node", "1"])).contains("--spawn-cluster"));
    assert!(err(cli(&["--spawn-cluster", "1", "--kill-node", "1"])).contains("2 nodes"));
    assert!(err(cli(&["--spawn-cluster", "1", "--fault", "rolling"])).contains("2 nodes"));
    assert!(err(cli(&["--spawn-cluster", "2", "--fault-at", "1"])).contains("--fault KIND"));
    assert!(err(cli(&[
        "--spawn-cluster",
        "2",
        "--fault",
        "pause",
        "--kill-node",
        "1"
    ]))
    .contains("one of"));
    assert!(err(cli(&["--spawn-cluster", "2", "--spawn"])).contains("one of"));
    assert!(err(cli(&[
        "--spawn-cluster",
        "2",
        "--kill-node",
        "9",
        "--duration",
        "5"
    ]))
    .contains("fault-at"));
    let f = file(r#"{"spawn-cluster": 2, "kill_node": 1}"#);
    let o = merge(cli(&[]), f).unwrap();
    assert!(matches!(o.target, Target::Cluster { nodes: 2, .. }));
}

#[test]
fn router_faults_need_two_routers() {
    let err = |c: Cli| merge(c, FileConfig::default()).unwrap_err().to_string();
    let ok = |c: Cli| merge(c, FileConfig::default()).unwrap();
    for kind in ["router-of-two", "stale-router"] {
        let e = err(cli(&["--spawn-cluster", "3", "--fault", kind]));
        assert!(e.contains("--routers 2"), "{e}");
        let o = ok(cli(&[
            "--spawn-cluster",
            "3",
            "--routers",
            "2",
            "--fault",
            kind,
        ]));
        assert!(matches!(o.target, Target::Cluster { routers: 2, .. }));
    }
    // Killing a node while a router is stale needs another node to take its files.
    let e = err(cli(&[
        "--spawn-cluster",
        "1",
        "--routers",
        "2",
        "--fault",
        "stale-router",
    ]));
    assert!(e.contains("2 nodes"), "{e}");
    // A router killed while another serves: one node is enough.
    ok(cli(&[
        "--spawn-cluster",
        "1",
        "--routers",
        "2",
        "--fault",
        "router-of-two",
    ]));
    assert!(err(cli(&["--spawn", "--routers", "2"])).contains("--spawn-cluster"));
    assert!(err(cli(&["--spawn-cluster", "2", "--routers", "0"])).contains("between 1 and 8"));
    let o = ok(cli(&["--spawn-cluster", "2"]));
    assert!(matches!(o.target, Target::Cluster { routers: 1, .. }));
    let f = file(r#"{"spawn-cluster": 2, "routers": 3}"#);
    let o = merge(cli(&[]), f).unwrap();
    assert!(matches!(o.target, Target::Cluster { routers: 3, .. }));
}
