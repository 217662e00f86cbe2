//! `ATRIUM_TRUST_PROXY` takes CIDR ranges as well as single addresses (what the chart's
//! `node.trustProxy` needs: router pods change address on every restart), and an entry that
//! is neither stops the node at start. docs/deploy.md describes exactly this.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

/// Six sign-ins (wrong passwords), each claiming another client behind the proxy; how many
/// were rate limited (429).
async fn limited_of_six(node: &Node, clients: &[&str]) -> usize {
    let mut limited = 0;
    for client in clients {
        limited += usize::from(signin_limited(node, &[("x-forwarded-for", client)]).await);
    }
    limited
}

/// One sign-in with a wrong password for an email of its own, with `headers`: whether it
/// was rate limited (429).
async fn signin_limited(node: &Node, headers: &[(&str, &str)]) -> bool {
    let body = json!({"email": unique_email("nobody"), "password": "wrong horse"});
    let r = http(
        node,
        "POST",
        "/api/signin",
        headers,
        Some(body.to_string().into_bytes()),
    )
    .await;
    assert!(
        r.status == 401 || r.status == 429,
        "sign-in answered {} {}",
        r.status,
        r.text
    );
    r.status == 429
}

const SIX: [&str; 6] = [
    "192.0.2.1",
    "192.0.2.2",
    "192.0.2.3",
    "192.0.2.4",
    "192.0.2.5",
    "192.0.2.6",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_inside_a_listed_range_is_believed() {
    let limits = [
        ("ATRIUM_AUTH_PER_IP_PER_MINUTE", "2"),
        ("ATRIUM_AUTH_PER_EMAIL_PER_MINUTE", "100"),
        ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
        ("ATRIUM_ARGON2_ITERATIONS", "1"),
    ];
    for trust in [
        "127.0.0.0/8",
        "10.244.0.0/16, 127.0.0.0/30",
        "::1/128,127.0.0.1/32",
    ] {
        let mut env = limits.to_vec();
        env.push(("ATRIUM_TRUST_PROXY", trust));
        let node = Node::start(&env).await;
        // Six clients behind the proxy are six addresses: none reaches the limit of 2.
        assert_eq!(limited_of_six(&node, &SIX).await, 0, "trust {trust:?}");
        // One client behind it is one address: its third sign-in on is limited.
        assert_eq!(
            limited_of_six(&node, &["192.0.2.9"; 6]).await,
            4,
            "trust {trust:?}"
        );
    }
    // A range the peer is not in: every request is the proxy's own address.
    let mut env = limits.to_vec();
    env.push(("ATRIUM_TRUST_PROXY", "10.244.0.0/16"));
    let node = Node::start(&env).await;
    assert_eq!(limited_of_six(&node, &SIX).await, 4);
}

#[tokio::test]
async fn an_entry_that_is_neither_an_address_nor_a_range_stops_the_node() {
    for bad in ["10.244.0.0/33", "routers.internal", "10.0.0.0/x"] {
        let data = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_atrium-node"))
            .args(["--bind", "127.0.0.1:0", "--data"])
            .arg(data.path())
            .env("ATRIUM_TRUST_PROXY", format!("127.0.0.1,{bad}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn atrium-node");
        let deadline = Instant::now() + Duration::from_secs(20);
        while child.try_wait().expect("wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the node started with ATRIUM_TRUST_PROXY entry {bad:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let out = child.wait_with_output().expect("output");
        assert!(!out.status.success(), "{bad:?}: {:?}", out.status);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("ATRIUM_TRUST_PROXY") && text.contains("not an address or a range"),
            "{bad:?}: {text}"
        );
    }
}

/// Behind a proxy that adds a line of its own to `X-Forwarded-For` (HAProxy's `option
/// forwardfor`) rather than append to the client's, the client's own first line is not what
/// the node believes: the lines are read together, right to left. Six sign-ins, each with
/// another forged first line, are one client (the eleventh review: only the first line was read,
/// so each forged address had a limit of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_first_line_of_x_forwarded_for_is_not_believed() {
    let node = Node::start(&[
        ("ATRIUM_AUTH_PER_IP_PER_MINUTE", "2"),
        ("ATRIUM_AUTH_PER_EMAIL_PER_MINUTE", "100"),
        ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
        ("ATRIUM_ARGON2_ITERATIONS", "1"),
        ("ATRIUM_TRUST_PROXY", "127.0.0.0/8"),
    ])
    .await;
    let mut limited = 0;
    for forged in SIX {
        let lines = [
            ("x-forwarded-for", forged),
            ("x-forwarded-for", "198.51.100.7"),
        ];
        limited += usize::from(signin_limited(&node, &lines).await);
    }
    assert_eq!(limited, 4, "the proxy's line names the client");
}
