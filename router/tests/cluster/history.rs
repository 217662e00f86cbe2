//! Version history in a fleet: naming and restoring through the routers reach the node that
//! serves the file, like any file route; the restore is an append fenced by that node's
//! epoch, and every socket, whichever router it came through, converges on it.

use serde_json::json;

use super::common::client::Client;
use super::common::http::{account, create_file, get_doc, http_at};
use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_through_the_router_on_three_nodes_nats() {
    restore_through_the_router("ATRIUM_TEST_NATS_URL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_through_the_router_on_three_nodes_redis() {
    restore_through_the_router("ATRIUM_TEST_REDIS_URL").await;
}

async fn restore_through_the_router(server_env: &str) {
    let _serial = serial().await;
    let fleet = fleet_on(server_env, 3, 2).await;
    let (r0, r1) = (fleet.routers[0].port, fleet.routers[1].port);
    let token = account(r0).await;
    let auth = format!("Bearer {token}");
    let file = create_file(r1, &token).await;
    let mut a = Client::join(r0, &file, &token).await;
    let mut b = Client::join(r1, &file, &token).await;
    a.send_patch(1, "first", json!(1)).await;
    a.expect("ack", Some(1), WAIT).await;

    // Named through one router...
    let r = http_at(
        r1,
        "POST",
        &format!("/api/files/{file}/versions"),
        &[("authorization", &auth)],
        Some(json!({"title": "one shape"})),
    )
    .await;
    r.assert_status(201);
    let named = r.body()["id"].as_u64().expect("a version id");
    let heard = b.expect("version", None, WAIT).await;
    assert_eq!(heard["version"]["title"], "one shape");
    b.send_patch(1, "second", json!(2)).await;
    b.expect("ack", Some(1), WAIT).await;
    let (_, two) = get_doc(r0, &token, &file).await;
    assert_eq!(two.as_object().map(|d| d.len()), Some(2), "{two}");

    // ... listed and restored through the other.
    let r = http_at(
        r0,
        "GET",
        &format!("/api/files/{file}/versions"),
        &[("authorization", &auth)],
        None,
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["versions"][0]["id"], json!(named));
    let r = http_at(
        r0,
        "POST",
        &format!("/api/files/{file}/versions/{named}/restore"),
        &[("authorization", &auth)],
        None,
    )
    .await;
    r.assert_status(200);
    let v = r.body()["v"].as_u64().expect("the restore's version");
    for c in [&mut a, &mut b] {
        // (Skipping the relay of an earlier patch it had not read yet.)
        let p = loop {
            let p = c.expect("patch", None, WAIT).await;
            if p["v"] == json!(v) {
                break p;
            }
        };
        assert_eq!(p["ops"], json!([{"op": "delete", "id": "second"}]));
        let restored = c.expect("restored", None, WAIT).await;
        assert_eq!(restored["from"]["id"], json!(named));
    }
    let (now, doc) = get_doc(r1, &token, &file).await;
    assert_eq!(now, v);
    assert_eq!(doc, json!({"first": {"type": "rect", "x": 1}}));
    drop(fleet);
}

/// Twenty people edit through both routers while a restore goes through one: every patch
/// acked after the restore's version is in the final document, on Postgres and NATS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_while_twenty_people_edit_loses_no_acked_patch() {
    let _serial = serial().await;
    let fleet = fleet_on("ATRIUM_TEST_NATS_URL", 3, 2).await;
    let ports = [fleet.routers[0].port, fleet.routers[1].port];
    let token = account(ports[0]).await;
    let auth = format!("Bearer {token}");
    let file = create_file(ports[1], &token).await;
    let mut first = Client::join(ports[0], &file, &token).await;
    first.send_patch(1, "base", json!(0)).await;
    first.expect("ack", Some(1), WAIT).await;
    let r = http_at(
        ports[1],
        "POST",
        &format!("/api/files/{file}/versions"),
        &[("authorization", &auth)],
        Some(json!({"title": "base"})),
    )
    .await;
    r.assert_status(201);
    let base = r.body()["id"].as_u64().expect("a version id");

    let mut editors = Vec::new();
    for i in 0..20 {
        let (port, file, token) = (ports[i % 2], file.clone(), token.clone());
        editors.push(tokio::spawn(async move {
            let mut c = Client::join(port, &file, &token).await;
            let mut acked = Vec::new();
            for k in 1..=15u64 {
                let key = format!("e{i}k{k}");
                c.send_patch(k, &key, json!(k)).await;
                let ack = c.expect("ack", Some(k), WAIT).await;
                acked.push((ack["v"].as_u64().expect("v"), key));
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            acked
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let r = http_at(
        ports[0],
        "POST",
        &format!("/api/files/{file}/versions/{base}/restore"),
        &[("authorization", &auth)],
        None,
    )
    .await;
    r.assert_status(200);
    let restore_v = r.body()["v"].as_u64().expect("v");
    let mut acked = Vec::new();
    for e in editors {
        acked.extend(e.await.expect("an editor"));
    }
    let (last_v, doc) = get_doc(ports[1], &token, &file).await;
    assert!(last_v > restore_v);
    let after: Vec<&String> = acked
        .iter()
        .filter(|(v, _)| *v > restore_v)
        .map(|(_, k)| k)
        .collect();
    let lost: Vec<&&String> = after
        .iter()
        .filter(|k| doc.get(k.as_str()).is_none())
        .collect();
    assert!(!after.is_empty(), "the restore came before the edits ended");
    assert!(
        lost.is_empty(),
        "acked after the restore and lost: {lost:?}"
    );
    assert_eq!(doc["base"], json!({"type": "rect", "x": 0}));
    drop(fleet);
}
