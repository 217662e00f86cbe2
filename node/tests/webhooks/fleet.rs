//! A fleet on Postgres and NATS: each event sent once, by its file's owner; after a
//! `kill -9` of the owner, the node that takes over sends what it left.

use super::*;

const LEASE_MS: u64 = 1500;

/// Two nodes sharing a database and a coordinator, with the webhook settings of the
/// single-node tests; answers the fleet and an API key of scope `server`.
async fn fleet() -> (Cluster, String) {
    let admin = unique_email("admin");
    let mut extra: Vec<(&str, &str)> = QUICK.to_vec();
    extra.push(("ATRIUM_ADMINS", &admin));
    let cluster = Cluster::start(Backend::Nats, 2, LEASE_MS, &extra).await;
    let (session, _) = signup(&cluster.nodes[0], &admin).await;
    let made = send_json(
        &cluster.nodes[0],
        "POST",
        "/api/admin/api-keys",
        Some(&session),
        &json!({"name": "backend", "scopes": ["server"]}),
    )
    .await;
    made.assert_status(201);
    let key = s(&made.json.unwrap()["key"]).to_string();
    (cluster, key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_owner_sends_what_a_killed_owner_left() {
    let hooks = Receiver::start().await;
    hooks.answer(503);
    let (mut cluster, key) = fleet().await;
    let (_, secret) = endpoint(
        &cluster.nodes[1],
        &key,
        &hooks.url(),
        Some(&["file.updated"]),
    )
    .await;
    let owner = cluster.account("owner").await;
    let (file, _) = cluster
        .files_owned_by(&owner, "n0", &["n0", "n1"], 1)
        .await
        .remove(0);
    let (mut ann, _) = Client::join(cluster.node("n0"), &file, &Hello::token(&owner)).await;
    for i in 1..=4u64 {
        ann.patch_acked(i, vec![put(&format!("n{i}"), json!({"i": i}))])
            .await;
    }
    // Tried (and refused) by n0, the owner: committed and picked up.
    let deadline = Instant::now() + Duration::from_secs(10);
    while hooks.all().is_empty() {
        assert!(
            Instant::now() < deadline,
            "no try reached the receiver\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.kill9("n0");
    drop(ann);
    hooks.answer(200);
    let got = hooks
        .wait_for(
            Duration::from_secs(30),
            "file.updated from the new owner",
            |g| !g.is_empty(),
        )
        .await;
    assert_eq!(versions(&of_file(&got, &file)), vec![4]);
    assert!(verify(&secret, &got[0]));
    let text = metrics_text(cluster.node("n1")).await;
    assert!(
        metric(&text, "atrium_webhook_delivered_total", &[]) >= 1.0,
        "n1 delivered it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_is_sent_once_across_the_fleet() {
    let hooks = Receiver::start().await;
    let (cluster, key) = fleet().await;
    let (_, secret) = endpoint(&cluster.nodes[0], &key, &hooks.url(), None).await;
    let owner = cluster.account("owner").await;
    let mut files = Vec::new();
    for node in ["n0", "n1"] {
        for (id, _) in cluster.files_owned_by(&owner, node, &["n0", "n1"], 2).await {
            files.push((node, id));
        }
    }
    for (node, file) in &files {
        let (mut c, _) = Client::join(cluster.node(node), file, &Hello::token(&owner)).await;
        for i in 1..=3u64 {
            c.patch_acked(i, vec![put(&format!("n{i}"), json!({}))])
                .await;
        }
        c.close().await;
    }
    let got = hooks
        .wait_for(Duration::from_secs(30), "every file's room.closed", |g| {
            files
                .iter()
                .all(|(_, f)| of_file(g, f).iter().any(|g| g.kind() == "room.closed"))
        })
        .await;
    // Whatever arrives later must not repeat anything.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got_all = hooks.all();
    assert!(got_all.len() >= got.len());
    let mut ids: Vec<&str> = got_all.iter().map(|g| g.id.as_str()).collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "a message was sent twice without a failure");
    for (_, f) in &files {
        let k = kinds(&of_file(&got_all, f));
        assert_eq!(
            k.first().map(String::as_str),
            Some("room.opened"),
            "{f}: {k:?}"
        );
        assert_eq!(
            k.iter().filter(|k| *k == "room.opened").count(),
            1,
            "{f}: {k:?}"
        );
        assert_eq!(versions(&of_file(&got_all, f)).last(), Some(&3));
    }
    assert!(got_all.iter().all(|g| verify(&secret, g)));
    // Both nodes sent their own files' messages.
    for node in &cluster.nodes {
        let text = metrics_text(node).await;
        assert!(metric(&text, "atrium_webhook_delivered_total", &[]) >= 1.0);
    }
}
