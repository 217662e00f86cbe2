//! The hello's token: each algorithm, the grant's roles, identity in presence.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_of_each_algorithm_open_sockets_with_the_grants_role() {
    let rs = key_pair(Algorithm::RS256, "rs");
    let es = key_pair(Algorithm::ES256, "es");
    let ed = key_pair(Algorithm::EdDSA, "ed");
    let keys = [&rs, &es, &ed]
        .iter()
        .map(|k| k.public_path.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let node = node(&[("ATRIUM_APP_TOKEN_PUBLIC_KEYS", &keys)]).await;
    let file = unique("doc");
    app_file(&node, &file).await;
    let minters = [hs(), Minter::of(&rs), Minter::of(&es), Minter::of(&ed)];
    for (i, m) in minters.iter().enumerate() {
        let sub = format!("user_{i}");
        let mut c = claims(&sub, 60, json!({ file.clone(): "edit" }));
        c["color"] = json!("#12ab34");
        let (mut editor, welcome) = Client::join(&node, &file, &Hello::token(&m.sign(&c))).await;
        assert_eq!(welcome["role"], "editor", "{:?}: {welcome}", m.alg);
        let me = own_entry(&welcome);
        assert_eq!(me["sub"], sub.as_str());
        assert_eq!(me["name"], format!("Person {sub}"));
        assert_eq!(me["color"], "#12ab34");
        editor
            .patch_acked(1, vec![put(&format!("k{i}"), json!({"n": i}))])
            .await;
        let c = claims(&sub, 60, json!({ file.clone(): "view" }));
        let (mut viewer, welcome) = Client::join(&node, &file, &Hello::token(&m.sign(&c))).await;
        assert_eq!(welcome["role"], "viewer", "{:?}", m.alg);
        viewer.send_patch(1, vec![put("nope", json!({}))]).await;
        let r = viewer.await_reject(json!(1)).await;
        assert_eq!(r["code"], "viewer");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_file_a_does_not_open_file_b() {
    let node = node(&[]).await;
    let (a, b) = (unique("a"), unique("b"));
    app_file(&node, &a).await;
    app_file(&node, &b).await;
    let token = hs().sign(&claims("ann", 60, json!({ a.clone(): "edit" })));
    Client::join(&node, &a, &Hello::token(&token)).await;
    Client::join_expect_close(&node, &b, &Hello::token(&token), 4003).await;
    // A prefix reaches the files under it only.
    let team = unique("team");
    let inside = format!("{team}-board");
    app_file(&node, &inside).await;
    let token = hs().sign(&claims("ann", 60, json!({ format!("{team}-*"): "view" })));
    let (_c, w) = Client::join(&node, &inside, &Hello::token(&token)).await;
    assert_eq!(w["role"], "viewer");
    Client::join_expect_close(&node, &a, &Hello::token(&token), 4003).await;
    // A file that does not exist.
    Client::join_expect_close(&node, "no_such_file", &Hello::token(&token), 4004).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_created_under_a_token_belongs_to_its_sub() {
    let node = node(&[]).await;
    let mut c = claims("maker", 60, json!({}));
    c["create"] = json!("sub");
    let token = hs().sign(&c);
    let r = send_json(
        &node,
        "POST",
        "/api/files",
        Some(&token),
        &json!({"name": "Mine"}),
    )
    .await;
    r.assert_status(201);
    let id = s(&r.json.as_ref().unwrap()["id"]).to_string();
    // Its owner needs no grant: they own it (edit, rename).
    let no_grant = hs().sign(&claims("maker", 60, json!({})));
    let (_c, w) = Client::join(&node, &id, &Hello::token(&no_grant)).await;
    assert_eq!(w["role"], "editor");
    let r = send_json(
        &node,
        "PATCH",
        &format!("/api/files/{id}"),
        Some(&no_grant),
        &json!({"name": "Renamed"}),
    )
    .await;
    r.assert_status(200);
    // Someone else's token without a grant does not reach it.
    let other = hs().sign(&claims("someone", 60, json!({})));
    Client::join_expect_close(&node, &id, &Hello::token(&other), 4003).await;
    // Without a `create` claim, no file.
    let r = send_json(
        &node,
        "POST",
        "/api/files",
        Some(&other),
        &json!({"name": "X"}),
    )
    .await;
    r.assert_error(403, "forbidden");
    // An Atrium session may not choose ids.
    let (session, _) = signup(&node, &unique_email("acct")).await;
    let r = send_json(
        &node,
        "POST",
        "/api/files",
        Some(&session),
        &json!({"id": "chosen"}),
    )
    .await;
    r.assert_status(400);
    // A chosen id taken already: 409.
    let mut c = claims("maker", 60, json!({}));
    c["create"] = json!("app");
    let r = send_json(
        &node,
        "POST",
        "/api/files",
        Some(&hs().sign(&c)),
        &json!({"id": id}),
    )
    .await;
    r.assert_error(409, "file-exists");
}

/// A person's token (`"create": "sub"`) chooses only ids its own grant gives it edit on. Any
/// id was taken (the fifteenth review): one team's member claimed an id in another team's
/// prefix, owned it, and read what that team then wrote there; the app's own later creation
/// of the id got 409. The app's token (`"create": "app"`) still chooses any id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_chooses_only_ids_within_their_own_grant() {
    let node = node(&[]).await;
    let (mine, theirs) = (unique("team_1"), unique("team_9"));
    let create = |sub: &str, grant: Value, how: &str| {
        let mut c = claims(sub, 60, grant);
        c["create"] = json!(how);
        hs().sign(&c)
    };
    let mallory = create(
        "mallory",
        json!({"team_1*": "edit", "team_9*": "view"}),
        "sub",
    );
    let made = |token: String, id: String| {
        let node = &node;
        async move {
            send_json(
                node,
                "POST",
                "/api/files",
                Some(&token),
                &json!({"id": id, "name": "x"}),
            )
            .await
        }
    };
    made(mallory.clone(), theirs.clone())
        .await
        .assert_error(403, "forbidden");
    let r = made(mallory, mine.clone()).await;
    r.assert_status(201);
    assert_eq!(r.body()["id"], json!(mine));
    // The id is still free for the app.
    made(create("backend", json!({}), "app"), theirs)
        .await
        .assert_status(201);
}
