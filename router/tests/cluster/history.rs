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
