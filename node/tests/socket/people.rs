//! Person ids: stable per client, a newer socket replaces an older one.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn person_id_is_stable_and_newer_socket_replaces_older() {
    let node = Node::start(&[]).await;
    let (_, id, hello, (mut first, w1), (other, w_other)) = owner_on_two_sockets(&node).await;
    assert_ne!(
        w1["you"], w_other["you"],
        "different client ids, different people"
    );

    // A newer hello with the same client closes the older socket with 4010.
    let (second, w2) = Client::join(&node, &id, &hello).await;
    assert_eq!(w1["you"], w2["you"]);
    first.expect_close(4010).await;

    second.close().await;
    let (mut third, w3) = Client::join(&node, &id, &hello).await;
    assert_eq!(w1["you"], w3["you"], "you must survive a reconnect");
    // The people list holds it once.
    let n = w3["people"]
        .as_array()
        .expect("people")
        .iter()
        .filter(|p| p["id"] == w3["you"])
        .count();
    assert_eq!(n, 1, "{w3}");
    assert_eq!(third.patch_acked(1, vec![put("a", json!({}))]).await, 1);
    other.close().await;
}
