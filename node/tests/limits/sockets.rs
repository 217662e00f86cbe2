//! Sockets per account and per address, behind a trusted proxy or not.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_holds_a_limited_number_of_sockets() {
    let node = Node::start(&[("ATRIUM_WS_PER_ACCOUNT", "2")]).await;
    let email = unique_email("many");
    let (t1, _) = signup(&node, &email).await;
    let t2 = signin(&node, &email).await;
    let f1 = s(&create_file(&node, &t1, "One", None).await["id"]).to_string();
    let f2 = s(&create_file(&node, &t1, "Two", None).await["id"]).to_string();
    set_link(&node, &t1, &f1, "edit").await;
    let key = s(&get(&node, &format!("/api/files/{f1}"), Some(&t1))
        .await
        .body()["edit_key"])
    .to_string();

    // Two sockets (two sessions, two files) are the account's whole allowance.
    let (s1, _) = Client::join(&node, &f1, &Hello::token(&t1)).await;
    let (_s2, _) = Client::join(&node, &f2, &Hello::token(&t2)).await;
    Client::join_refused_with(&node, &f1, &Hello::token(&t1), &[], 4029).await;
    Client::join_refused_with(&node, &f2, &Hello::token(&t2), &[], 4029).await;
    // Others are not affected.
    let (_g, wg) = Client::join(&node, &f1, &Hello::key(&key)).await;
    assert_eq!(wg["role"], "editor");
    // Closing one frees a slot.
    let t1_again = Hello::token(&t1);
    let (_s3, w) = Client::refused_until_freed(&node, &f2, &t1_again, 4029, s1.close()).await;
    assert_eq!(w["type"], "welcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_holds_a_limited_number_of_sockets_counted_from_the_upgrade() {
    let (node, f) = node_with_file(&[("ATRIUM_WS_PER_IP", "3")]).await;
    let [(_g1, _), (_g2, _)] =
        Client::join_each(&node, &f.id, [f.by_view_key(), f.by_owner()]).await;
    // Upgraded, no hello yet: it counts.
    let pending = Client::connect(&node, &f.id).await;
    let editor = f.by_edit_key();
    let (_g3, w) = Client::refused_until_freed(&node, &f.id, &editor, 4029, pending.close()).await;
    assert_eq!(w["type"], "welcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_sockets_count_against_the_forwarded_address() {
    let (node, f) = node_with_file(&[("ATRIUM_WS_PER_IP", "3"), TRUST_THE_TEST]).await;
    let mut held = Vec::new();
    for addr in ["10.0.0.1", "10.0.0.2"] {
        for _ in 0..3 {
            let (c, _) = viewer_from(&node, &f, addr).await;
            held.push(c);
        }
    }
    viewer_refused_from(&node, &f, "10.0.0.1", 4029).await;
    viewer_refused_from(&node, &f, "10.0.0.2", 4029).await;
    // The proxy's own address has used nothing.
    let (_direct, w) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    assert_eq!(w["type"], "welcome");
    let (_other, w) = viewer_from(&node, &f, "10.0.0.3").await;
    assert_eq!(w["type"], "welcome");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_addresses_are_ignored_without_a_trusted_proxy() {
    let (node, f) = node_with_file(&[("ATRIUM_WS_PER_IP", "3")]).await;
    let mut held = Vec::new();
    for addr in ["10.0.0.1", "10.0.0.2", "10.0.0.3"] {
        let (c, _) = viewer_from(&node, &f, addr).await;
        held.push(c);
    }
    viewer_refused_from(&node, &f, "10.0.0.4", 4029).await;
}

/// Joins `f` with its view key, as if from `addr` (behind a trusted proxy).
async fn viewer_from(node: &Node, f: &SharedFile, addr: &str) -> (Client, Value) {
    let forwarded = [("x-forwarded-for", addr)];
    Client::join_with(node, &f.id, &Hello::key(&f.view_key), &forwarded).await
}

/// A join of `f` with its view key, as if from `addr`, is closed with `code`.
async fn viewer_refused_from(node: &Node, f: &SharedFile, addr: &str, code: u16) {
    let forwarded = [("x-forwarded-for", addr)];
    Client::join_refused_with(node, &f.id, &Hello::key(&f.view_key), &forwarded, code).await;
}
