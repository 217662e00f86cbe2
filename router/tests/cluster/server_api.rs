//! The server API in a fleet: server patches go through the routers to the file's node and
//! are fenced like any append; with the owner killed mid-run (`kill -9`), patches are
//! retried with their op ids until answered, and every editor and every server patch is in
//! the final document exactly once (the version count says so), with 0 acked patches lost.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::client::{Client, Event};
use super::common::http::{create_file, get_doc, http_at, try_http};
use super::common::*;

const ADMIN: &str = "server-api-admin@example.test";

/// Signs up the server admin and makes an API key of the `server` scope.
async fn server_key(port: u16) -> (String, String) {
    let r = http_at(
        port,
        "POST",
        "/api/signup",
        &[],
        Some(json!({"email": ADMIN, "password": PASSWORD, "name": "Admin"})),
    )
    .await;
    r.assert_status(201);
    let admin = r.body()["token"].as_str().unwrap().to_owned();
    let r = http_at(
        port,
        "POST",
        "/api/admin/api-keys",
        &[("authorization", &format!("Bearer {admin}"))],
        Some(json!({"name": "Importer", "scopes": ["server"]})),
    )
    .await;
    r.assert_status(201);
    (admin, r.body()["key"].as_str().unwrap().to_owned())
}

/// Sends a server patch until a node answers 200, through either router, with the same op
/// id every time; the answer's body.
async fn patch_until_answered(
    ports: [u16; 2],
    key: &str,
    file: &str,
    op: &str,
    ops: Value,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut i = 0;
    loop {
        let port = ports[i % 2];
        i += 1;
        let r = try_http(
            port,
            "POST",
            &format!("/api/files/{file}/patches"),
            &[("authorization", &format!("Bearer {key}"))],
            Some(json!({"op_id": op, "ops": ops})),
        )
        .await;
        match r {
            Some(r) if r.status == 200 => return r.body().clone(),
            // A node that is not (or no longer) the file's, one that died, a router still
            // waiting for the lease to lapse: the same request again.
            Some(r) if [409, 502, 503].contains(&r.status) => {}
            Some(r) => panic!("server patch {op}: {} {}", r.status, r.text),
            None => {}
        }
        assert!(
            Instant::now() < deadline,
            "server patch {op} never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One editor: `count` patches, each sent until acked, rejoining (same client, resuming)
/// when its node goes away; answers the keys it got acked and how often it came back.
async fn editor(
    ports: [u16; 2],
    file: String,
    token: String,
    tag: String,
    count: u64,
) -> (Vec<String>, u32) {
    let client = secret();
    let patience = Duration::from_millis(LEASE_MS * 5);
    let mut c = Client::rejoin(&ports, &file, &token, &client, 0, patience).await;
    let mut acked = Vec::new();
    let mut rejoins = 0;
    for k in 1..=count {
        let key = format!("{tag}-{k}");
        loop {
            c.send_patch(k, &key, json!(k)).await;
            let got = loop {
                match c.next(WAIT).await {
                    Event::Json(v) if v["type"] == "ack" && v["id"] == json!(k) => break true,
                    Event::Json(_) => continue,
                    _ => break false,
                }
            };
            if got {
                acked.push(key.clone());
                break;
            }
            // The node went away before the ack: come back and send it again (same id).
            c = Client::rejoin(&ports, &file, &token, &client, c.version, patience).await;
            rejoins += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (acked, rejoins)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_patches_through_the_router_survive_the_owner_killed_nats() {
    owner_killed_under_server_patches("ATRIUM_TEST_NATS_URL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_patches_through_the_router_survive_the_owner_killed_redis() {
    owner_killed_under_server_patches("ATRIUM_TEST_REDIS_URL").await;
}

async fn owner_killed_under_server_patches(server_env: &str) {
    let _serial = serial().await;
    let bins = Binaries {
        node: atrium_testkit::fleet::node_binary(),
        router: env!("CARGO_BIN_EXE_atrium-router").into(),
    };
    let mut fleet = Fleet::start_with(
        bins,
        server_env,
        LEASE_MS,
        3,
        2,
        &[("ATRIUM_ADMINS", ADMIN), ("ATRIUM_ROOM_REPORT_MS", "200")],
    )
    .await;
    let ports = [fleet.routers[0].port, fleet.routers[1].port];
    let (owner_token, key) = server_key(ports[0]).await;
    let file = create_file(ports[1], &owner_token).await;
    // The file's room opens for the first server patch.
    let first = patch_until_answered(
        ports,
        &key,
        &file,
        "srv-0",
        json!([
            {"op": "put", "id": "srv-0", "props": {"k": 0}}
        ]),
    )
    .await;
    assert_eq!(first["v"], json!(1));
    let owner = fleet.serving(&owner_token, &file).await.expect("an owner");

    const EDITORS: u64 = 4;
    const EACH: u64 = 100;
    const SERVER: u64 = 30;
    let mut editors = Vec::new();
    for i in 0..EDITORS {
        editors.push(tokio::spawn(editor(
            ports,
            file.clone(),
            owner_token.clone(),
            format!("e{i}"),
            EACH,
        )));
    }
    let mut answers = Vec::new();
    let mut before_kill = Vec::new();
    let mut killed_at = None;
    for k in 1..SERVER {
        if k == SERVER / 3 {
            fleet.node_mut(&owner).proc.kill9();
            killed_at = Some(Instant::now());
        }
        let op = format!("srv-{k}");
        let ops = json!([{"op": "put", "id": op, "props": {"k": k}}]);
        let a = patch_until_answered(ports, &key, &file, &op, ops.clone()).await;
        // A retry of an answered request gets the same answer, on whichever node serves now.
        let again = patch_until_answered(ports, &key, &file, &op, ops).await;
        assert_eq!(again["v"], a["v"], "{op}: {a} then {again}");
        assert_eq!(again["replayed"], json!(true));
        answers.push(a["v"].as_u64().unwrap());
        if killed_at.is_none() {
            before_kill.push((op.clone(), a["v"].clone()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut acked = Vec::new();
    let mut rejoins = 0;
    for e in editors {
        let (keys, n) = e.await.expect("an editor");
        acked.extend(keys);
        rejoins += n;
    }
    assert!(rejoins > 0, "the owner died while the editors were editing");
    // Ops the dead owner answered are recognised by the new one, from the store.
    assert!(!before_kill.is_empty());
    for (op, v) in &before_kill {
        let again = patch_until_answered(ports, &key, &file, op, json!([])).await;
        assert_eq!(&again["v"], v, "{op} after the failover: {again}");
        assert_eq!(again["replayed"], json!(true));
    }
    let new_owner = fleet
        .serving(&owner_token, &file)
        .await
        .expect("a new owner");
    assert_ne!(new_owner, owner, "the file moved to a survivor");
    let (v, doc) = get_doc(ports[0], &owner_token, &file).await;
    let lost: Vec<&String> = acked
        .iter()
        .filter(|k| doc.get(k.as_str()).is_none())
        .collect();
    assert!(lost.is_empty(), "acked patches lost: {lost:?}");
    for k in 0..SERVER {
        assert_eq!(doc[format!("srv-{k}")]["k"], json!(k), "server patch {k}");
    }
    // Exactly one version per editor patch and per server patch: nothing applied twice.
    assert_eq!(v, EDITORS * EACH + SERVER, "versions");
    assert!(answers.windows(2).all(|w| w[0] < w[1]), "{answers:?}");
    // The fleet's rooms, from the coordinator: the file on its new owner.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = http_at(
            ports[1],
            "GET",
            "/api/server/rooms",
            &[("authorization", &format!("Bearer {key}"))],
            None,
        )
        .await;
        r.assert_status(200);
        let rooms = r.body()["rooms"].as_array().unwrap().clone();
        if rooms
            .iter()
            .any(|x| x["file"] == json!(file) && x["node"] == json!(new_owner))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the room never showed on {new_owner}: {rooms:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "server API failover: killed {owner} {:?} ago; {} editor patches ({rejoins} rejoins) and {SERVER} server patches kept",
        killed_at.map(|t| t.elapsed()),
        acked.len()
    );
    drop(fleet);
}
