//! A node's `409 moved` teaches the router where a file is held.

use std::time::Duration;

use serde_json::json;

use super::common::client::Client;
use super::common::http::{account, create_file, get_doc, http_at};
use super::common::*;

/// A node's `409 moved` teaches the router the holder: a `GET` is sent once more to the holder,
/// other methods get the 409 and the next request goes to the right node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_answer_teaches_the_router_the_holder() {
    let _serial = serial().await;
    let mut fleet = fleet(3, 0).await;
    // A router that remembers a single holder, so it can be made to forget.
    fleet.add_router(&[("ATRIUM_ROUTER_HOLDERS", "1")]).await;
    fleet.wait_members(0, 3).await;
    let (router, admin) = (fleet.routers[0].port, fleet.routers[0].admin);
    let token = account(router).await;
    let auth = format!("Bearer {token}");
    let ids: Vec<atrium_coordinator::NodeId> = fleet
        .nodes
        .iter()
        .map(|n| atrium_coordinator::NodeId::parse(&n.id).unwrap())
        .collect();
    let ring = atrium_coordinator::Ring::new(ids.iter());

    // The file is opened straight on a node that is not its ring owner: that node takes it.
    let file = create_file(router, &token).await;
    let owner = ring.owner(&file).unwrap().to_string();
    let holder = fleet
        .nodes
        .iter()
        .find(|n| n.id != owner)
        .unwrap()
        .id
        .clone();
    let _a = Client::join(fleet.node(&holder).port, &file, &token).await;
    assert_eq!(
        fleet.serving(&token, &file).await.as_deref(),
        Some(holder.as_str())
    );

    // Another file's lease pushes the first out of the router's memory.
    let _b = forget(router, admin, &token, 2).await;

    // GET: the ring owner answers 409, the router asks once and sends it to the holder.
    let (v, _) = get_doc(router, &token, &file).await;
    assert_eq!(v, 0);
    let m = http_at(admin, "GET", "/metrics", &[], None).await.text;
    assert_eq!(metric(&m, "atrium_router_moved_total"), 1.0, "{m}");

    // PATCH: the 409 reaches the client, and the router learns from its body.
    let _c = forget(router, admin, &token, 3).await;
    let path = format!("/api/files/{file}");
    let body = Some(json!({"name": "Renamed"}));
    let r = http_at(
        router,
        "PATCH",
        &path,
        &[("authorization", &auth)],
        body.clone(),
    )
    .await;
    r.assert_status(409);
    assert_eq!(r.body()["error"]["node"], json!(holder));
    let r = http_at(router, "PATCH", &path, &[("authorization", &auth)], body).await;
    r.assert_status(200);
}

/// Opens another file through the router until it has heard `n` lease events: with a
/// one-holder memory, the previous file is forgotten.
async fn forget(router: u16, admin: u16, token: &str, n: u64) -> Client {
    let other = create_file(router, token).await;
    let c = Client::join(router, &other, token).await;
    let heard = || async {
        let m = http_at(admin, "GET", "/metrics", &[], None).await.text;
        match metric(&m, "atrium_router_lease_events_total") >= n as f64 {
            true => Ok(()),
            false => Err(m),
        }
    };
    atrium_testkit::wait::until(WAIT, Duration::from_millis(50), heard, |m| {
        format!("lease events never reached {n}:\n{m}")
    })
    .await;
    c
}

/// The value of an unlabelled metric in Prometheus text; a missing one (a renamed metric)
/// fails the test rather than reading as 0.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} is not exported by the router"))
}
