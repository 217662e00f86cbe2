//! The history API end to end on one node: checkpoints while editing, naming, listing in
//! pages, reading, comparing, renaming, deleting, restoring, the room's messages, and who
//! may do what.

use super::*;

fn shape(x: i64) -> Value {
    json!({"type": "rect", "x": x, "y": 0})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_end_to_end() {
    let node = Node::start(&[("ATRIUM_CHECKPOINT_MS", "300")]).await;
    let file = shared_file(&node, "edit").await;
    let (id, owner) = (file.id.clone(), file.owner.clone());
    let (mut me, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (mut guest, _) = Client::join(&node, &id, &Hello::key(&file.edit_key)).await;

    // Checkpoints appear while editing, naming who edited.
    me.patch_acked(1, vec![put("a", shape(1)), put("b", shape(2))])
        .await;
    guest.patch_acked(1, vec![put("c", shape(3))]).await;
    let deadline = std::time::Instant::now() + WAIT;
    let auto = loop {
        let vs = all_versions(&node, &id, &owner).await;
        if let Some(v) = vs.iter().find(|v| v["kind"] == "auto") {
            break v.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint while editing"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let editors: Vec<&str> = auto["editors"].as_array().unwrap().iter().map(s).collect();
    assert!(editors.contains(&"Guest") && editors.len() == 2, "{auto}");
    let announced = me
        .recv_type("version", WAIT)
        .await
        .expect("a version message");
    assert_eq!(announced["event"], "saved");

    // Named versions.
    let a = name(&node, &id, &owner, "A").await;
    assert_eq!(a["kind"], "named");
    assert_eq!(a["title"], "A");
    let heard = me
        .recv_type("version", WAIT)
        .await
        .expect("named is announced");
    assert_eq!(heard["version"]["title"], "A");
    me.patch_acked(
        2,
        vec![set("a", json!({"x": 10})), delete("b"), put("d", shape(4))],
    )
    .await;
    let b = name(&node, &id, &owner, "B").await;
    let (aid, bid) = (a["id"].as_u64().unwrap(), b["id"].as_u64().unwrap());
    assert!(bid > aid);

    // Listed newest first, in pages.
    let all = all_versions(&node, &id, &owner).await;
    let ids: Vec<u64> = all.iter().map(|v| v["id"].as_u64().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_by(|x, y| y.cmp(x));
    assert_eq!(ids, sorted, "newest first");
    assert_eq!(ids[0], bid);

    // Read and compare.
    let doc_a = version_doc(&node, &id, &owner, aid).await;
    assert_eq!(doc_a, json!({"a": shape(1), "b": shape(2), "c": shape(3)}));
    let r = get(
        &node,
        &format!("/api/files/{id}/versions/compare?from={aid}&to={bid}"),
        Some(&owner),
    )
    .await;
    r.assert_status(200);
    let c = r.body();
    assert_eq!(c["added"], json!(["d"]));
    assert_eq!(c["removed"], json!(["b"]));
    assert_eq!(c["changed"], json!([{"id": "a", "props": ["x"]}]));

    // Rename; an unknown version is 404.
    let r = send_json(
        &node,
        "PATCH",
        &format!("/api/files/{id}/versions/{aid}"),
        Some(&owner),
        &json!({"title": "First"}),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["title"], "First");
    get(
        &node,
        &format!("/api/files/{id}/versions/999999"),
        Some(&owner),
    )
    .await
    .assert_error(404, "not-found");

    // Restore A (by the guest's edit key): everyone converges without a reload.
    let r = http(
        &node,
        "POST",
        &format!("/api/files/{id}/versions/{aid}/restore"),
        &[("x-atrium-key", file.edit_key.as_str())],
        None,
    )
    .await;
    r.assert_status(200);
    let v = r.body()["v"].as_u64().unwrap();
    assert_eq!(r.body()["restored_from"], json!(aid));
    let patch = me
        .recv_type("patch", WAIT)
        .await
        .expect("the restore's patch");
    assert_eq!(patch["v"], json!(v));
    let restored = me
        .recv_type("restored", WAIT)
        .await
        .expect("a restored message");
    assert_eq!(restored["v"], json!(v));
    assert_eq!(restored["from"]["id"], json!(aid));
    assert_eq!(restored["by"], "Guest");
    let (now_v, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(now_v, v);
    assert_eq!(doc, doc_a);
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let vs = all_versions(&node, &id, &owner).await;
        if let Some(r) = vs.iter().find(|x| x["kind"] == "restore") {
            assert_eq!(r["title"], "Restored from \u{201c}First\u{201d}");
            assert_eq!(r["restored_from"], json!(aid));
            assert_eq!(r["version"], json!(v));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no restore version");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // ... and undone by restoring the version before it.
    restore_as(&node, &id, &owner, bid).await.assert_status(200);
    assert_eq!(
        get_doc(&node, &owner, &id).await.1,
        version_doc(&node, &id, &owner, bid).await
    );

    // Deleting: the owner's, named versions only.
    let del = format!("/api/files/{id}/versions/{aid}");
    http(
        &node,
        "DELETE",
        &del,
        &[("x-atrium-key", file.edit_key.as_str())],
        None,
    )
    .await
    .assert_error(403, "forbidden");
    send_empty(
        &node,
        "DELETE",
        &format!("/api/files/{id}/versions/{}", auto["id"]),
        Some(&owner),
    )
    .await
    .assert_error(409, "conflict");
    send_empty(&node, "DELETE", &del, Some(&owner))
        .await
        .assert_status(204);
    get(&node, &del, Some(&owner))
        .await
        .assert_error(404, "not-found");
    assert_eq!(version_doc(&node, &id, &owner, bid).await["d"], shape(4));
}

/// Viewers list and read only when the owner allows it, and never compare, name or
/// restore; guests get what their key gives; strangers get nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewers_and_guests_are_refused_what_they_may_not_do() {
    let node = Node::start(&[]).await;
    let file = shared_file(&node, "edit").await;
    let (id, owner) = (file.id.clone(), file.owner.clone());
    let (mut me, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    me.patch_acked(1, vec![put("a", json!({"x": 1}))]).await;
    let v1 = name(&node, &id, &owner, "one").await["id"]
        .as_u64()
        .unwrap();
    let view = [("x-atrium-key", file.view_key.as_str())];
    let edit = [("x-atrium-key", file.edit_key.as_str())];
    let list = format!("/api/files/{id}/versions");
    let read = format!("/api/files/{id}/versions/{v1}");
    let compare = format!("/api/files/{id}/versions/compare?from={v1}");
    let restore = format!("/api/files/{id}/versions/{v1}/restore");
    let naming = Some(json!({"title": "x"}).to_string().into_bytes());

    // A viewer, before the owner allows it: nothing.
    for path in [&list, &read, &compare] {
        http(&node, "GET", path, &view, None)
            .await
            .assert_error(403, "forbidden");
    }
    http(&node, "POST", &list, &view, naming.clone())
        .await
        .assert_error(403, "forbidden");
    http(&node, "POST", &restore, &view, None)
        .await
        .assert_error(403, "forbidden");
    // Strangers and bad keys.
    let stranger = new_account(&node, "stranger").await;
    get(&node, &list, Some(&stranger))
        .await
        .assert_error(403, "forbidden");
    get(&node, &list, None)
        .await
        .assert_error(401, "unauthorized");
    get_with_key(&node, &list, &secret())
        .await
        .assert_error(401, "unauthorized");

    // The owner allows viewers: list and read, still not compare, name or restore.
    let r = patch_file(
        &node,
        Some(&owner),
        &id,
        &json!({"viewers_see_history": true}),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["viewers_see_history"], true);
    http(&node, "GET", &list, &view, None)
        .await
        .assert_status(200);
    http(&node, "GET", &read, &view, None)
        .await
        .assert_status(200);
    http(&node, "GET", &compare, &view, None)
        .await
        .assert_error(403, "forbidden");
    http(&node, "POST", &list, &view, naming.clone())
        .await
        .assert_error(403, "forbidden");
    http(&node, "POST", &restore, &view, None)
        .await
        .assert_error(403, "forbidden");

    // A guest with the edit key is an editor while the link says edit...
    http(&node, "GET", &compare, &edit, None)
        .await
        .assert_status(200);
    http(&node, "POST", &list, &edit, naming.clone())
        .await
        .assert_status(201);
    // ... and a viewer once it says view.
    set_link(&node, &owner, &id, "view").await;
    http(&node, "POST", &restore, &edit, None)
        .await
        .assert_error(403, "forbidden");
    set_link(&node, &owner, &id, "none").await;
    http(&node, "GET", &list, &edit, None)
        .await
        .assert_error(403, "forbidden");
}

/// A deleted file's history is gone: its versions answer 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_files_history_is_gone() {
    let node = Node::start(&[]).await;
    let file = shared_file(&node, "edit").await;
    let (id, owner) = (file.id.clone(), file.owner.clone());
    let (mut me, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    me.patch_acked(1, vec![put("a", json!({"x": 1}))]).await;
    let v1 = name(&node, &id, &owner, "one").await["id"]
        .as_u64()
        .unwrap();
    send_empty(&node, "DELETE", &format!("/api/files/{id}"), Some(&owner))
        .await
        .assert_status(204);
    get(&node, &format!("/api/files/{id}/versions"), Some(&owner))
        .await
        .assert_error(404, "not-found");
    get(
        &node,
        &format!("/api/files/{id}/versions/{v1}"),
        Some(&owner),
    )
    .await
    .assert_error(404, "not-found");
}

/// Named versions are kept until the owner deletes them, and anyone with the edit key
/// may name one: their rate is bounded per file, everyone with the link together (the
/// review: a guest named 200 versions of a 4 MB document in 19 s). The owner has an
/// allowance of their own, which no guest can spend (the ninth review: a guest's namings
/// made the owner's answer 429).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naming_versions_is_rate_limited_per_file() {
    let node = Node::start(&[("ATRIUM_VERSIONS_NAMED_PER_MINUTE", "3")]).await;
    let file = shared_file(&node, "edit").await;
    let (id, owner) = (file.id.clone(), file.owner.clone());
    let edit = [("x-atrium-key", file.edit_key.as_str())];
    let list = format!("/api/files/{id}/versions");
    let naming = || Some(json!({"title": "spam"}).to_string().into_bytes());
    for _ in 0..3 {
        http(&node, "POST", &list, &edit, naming())
            .await
            .assert_status(201);
    }
    let r = http(&node, "POST", &list, &edit, naming()).await;
    r.assert_error(429, "rate-limited");
    assert!(r.header("retry-after").is_some(), "{}", r.text);
    // The owner's allowance is their own, and runs out at the same rate; another file
    // has its own.
    for title in ["mine", "mine too", "mine as well"] {
        name(&node, &id, &owner, title).await;
    }
    send_json(
        &node,
        "POST",
        &list,
        Some(&owner),
        &json!({"title": "one more"}),
    )
    .await
    .assert_error(429, "rate-limited");
    let other = shared_file(&node, "edit").await;
    name(&node, &other.id, &other.owner, "elsewhere").await;
    let versions = get(&node, &list, Some(&owner)).await;
    versions.assert_status(200);
    assert_eq!(
        versions.body()["versions"].as_array().map(Vec::len),
        Some(6)
    );
}

/// A rename reaches everyone in the file with the version's title and description, and
/// anyone with the edit key may rename: renames share the file's naming rate (the fifth
/// review: 686 renames a second from four addresses, 420 MB a second to a room of 99).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renaming_versions_shares_the_naming_rate() {
    let node = Node::start(&[("ATRIUM_VERSIONS_NAMED_PER_MINUTE", "3")]).await;
    let file = shared_file(&node, "edit").await;
    let (id, owner) = (file.id.clone(), file.owner.clone());
    let vid = name(&node, &id, &owner, "first").await["id"]
        .as_u64()
        .unwrap();
    let edit = [("x-atrium-key", file.edit_key.as_str())];
    let path = format!("/api/files/{id}/versions/{vid}");
    let renaming = |t: &str| Some(json!({"title": t}).to_string().into_bytes());
    // The owner's naming spent the owner's allowance; the guests have three of their own.
    for t in ["second", "third", "fourth"] {
        http(&node, "PATCH", &path, &edit, renaming(t))
            .await
            .assert_status(200);
    }
    let r = http(&node, "PATCH", &path, &edit, renaming("fifth")).await;
    r.assert_error(429, "rate-limited");
    assert!(r.header("retry-after").is_some(), "{}", r.text);
    let versions = get(&node, &format!("/api/files/{id}/versions"), Some(&owner)).await;
    assert_eq!(
        versions.body()["versions"][0]["title"],
        "fourth",
        "{}",
        versions.text
    );
}

/// Each restore makes a version kept for a day and sends the whole difference to everyone
/// in the file, and anyone with the edit key may restore: their rate is bounded per file
/// (the third review: 155 restores of a 12 MB version in 30 s grew the store by 1.1 GB).
/// The owner's restores have an allowance of their own (the ninth review: a guest's
/// restores made the owner's answer 429).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restores_are_rate_limited_per_file() {
    let node = Node::start(&[("ATRIUM_RESTORES_PER_MINUTE", "3")]).await;
    let file = shared_file(&node, "edit").await;
    let (id, owner) = (file.id.clone(), file.owner.clone());
    let first = name(&node, &id, &owner, "first").await["id"]
        .as_u64()
        .unwrap();
    let edit = [("x-atrium-key", file.edit_key.as_str())];
    let restore = format!("/api/files/{id}/versions/{first}/restore");
    for _ in 0..3 {
        http(&node, "POST", &restore, &edit, None)
            .await
            .assert_status(200);
    }
    let r = http(&node, "POST", &restore, &edit, None).await;
    r.assert_error(429, "rate-limited");
    assert!(r.header("retry-after").is_some(), "{}", r.text);
    // The owner's allowance is their own; another file has its own too.
    restore_as(&node, &id, &owner, first)
        .await
        .assert_status(200);
    let other = shared_file(&node, "edit").await;
    let v = name(&node, &other.id, &other.owner, "elsewhere").await["id"]
        .as_u64()
        .unwrap();
    restore_as(&node, &other.id, &other.owner, v)
        .await
        .assert_status(200);
}

/// A viewer the HTTP API keeps out of the history hears nothing of it on the socket either:
/// no `version` (titles, descriptions, who edited) and no `restored`, though the restore's
/// `patch` reaches it. Before the fifteenth review every history message went to everyone in
/// the file. Once the owner lets viewers see the history, they hear of versions too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewers_hear_of_versions_only_when_they_may_read_the_history() {
    let node = Node::start(&[]).await;
    let file = shared_file(&node, "view").await;
    let (id, owner) = (file.id.clone(), file.owner.clone());
    let (mut me, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (mut viewer, _) = Client::join(&node, &id, &Hello::key(&file.view_key)).await;
    me.patch_acked(1, vec![put("a", shape(1))]).await;
    let secret = name(&node, &id, &owner, "Layoffs plan").await;
    me.recv_type("version", WAIT)
        .await
        .expect("the owner hears of the version");
    me.patch_acked(2, vec![put("b", shape(2))]).await;
    let v = secret["id"].as_u64().unwrap();
    restore_as(&node, &id, &owner, v).await.assert_status(200);
    me.recv_type("restored", WAIT)
        .await
        .expect("the owner hears of the restore");

    // The viewer gets the edits and the restore's patch, and nothing of the history.
    let mut heard = Vec::new();
    let restored = loop {
        let m = viewer.recv_json().await;
        heard.push(m["type"].as_str().unwrap_or("").to_owned());
        if m["type"] == "patch" && m["by"] == "restore" {
            break m;
        }
    };
    assert_eq!(restored["ops"], json!([{"op": "delete", "id": "b"}]));
    while let Some(m) = viewer.recv_json_timeout(Duration::from_millis(500)).await {
        heard.push(m["type"].as_str().unwrap_or("").to_owned());
    }
    assert!(
        !heard.iter().any(|t| t == "version" || t == "restored"),
        "a viewer who may not see the history heard of it: {heard:?}"
    );

    // Allowed, the viewer hears of the next version.
    patch_file(
        &node,
        Some(&owner),
        &id,
        &json!({"viewers_see_history": true}),
    )
    .await
    .assert_status(200);
    name(&node, &id, &owner, "Shared plan").await;
    let told = viewer
        .recv_type("version", WAIT)
        .await
        .expect("an allowed viewer hears of versions");
    assert_eq!(told["version"]["title"], "Shared plan");
}
