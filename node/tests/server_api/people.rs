//! Who is in a file (answered by the room, paged), and kicking a person out (4006).

use super::*;

async fn people(node: &Node, key: &str, file: &str, query: &str) -> Value {
    let r = get(node, &format!("/api/files/{file}/people{query}"), Some(key)).await;
    r.assert_status(200);
    r.body().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_are_listed_by_page_and_a_kicked_person_is_closed_with_4006() {
    let (node, _, key, _) = node_with_key(&[], &["server"]).await;
    let file = shared_file(&node, "edit").await;
    // Nobody yet, and asking opens no room.
    let none = people(&node, &key, &file.id, "").await;
    assert_eq!(none["count"], json!(0));
    assert_eq!(none["people"], json!([]));

    let (mut owner, w_owner) = Client::join(&node, &file.id, &file.by_owner()).await;
    let (mut editor, w_editor) = Client::join(&node, &file.id, &file.by_edit_key()).await;
    let (mut viewer, w_viewer) = Client::join(&node, &file.id, &file.by_view_key()).await;
    viewer
        .send_presence(json!({"page": "page1", "cursor": [1, 2]}))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let all = people(&node, &key, &file.id, "").await;
    assert_eq!(all["count"], json!(3));
    let list = all["people"].as_array().unwrap();
    let ids: Vec<&str> = list.iter().map(|p| s(&p["id"])).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "in person id order");
    let find = |w: &Value| list.iter().find(|p| p["id"] == w["you"]).unwrap().clone();
    assert_eq!(find(&w_owner)["role"], "editor");
    assert!(find(&w_owner)["account"].is_string());
    assert_eq!(find(&w_viewer)["role"], "viewer");
    assert_eq!(find(&w_viewer)["page"], "page1");
    assert_eq!(find(&w_editor)["name"], "Guest");
    // Pages of two: then one, then the end.
    let first = people(&node, &key, &file.id, "?limit=2").await;
    assert_eq!(first["people"].as_array().unwrap().len(), 2);
    let next = s(&first["next"]).to_owned();
    let second = people(&node, &key, &file.id, &format!("?limit=2&after={next}")).await;
    assert_eq!(second["people"].as_array().unwrap().len(), 1);
    assert!(second["next"].is_null());
    for bad in ["?limit=0", "?limit=501", "?after=bad%20id"] {
        get(
            &node,
            &format!("/api/files/{}/people{bad}", file.id),
            Some(&key),
        )
        .await
        .assert_error(400, "bad-request");
    }
    // A session token is not an API key.
    get(
        &node,
        &format!("/api/files/{}/people", file.id),
        Some(&file.owner),
    )
    .await
    .assert_error(401, "unauthorized");

    // Kick the editor: its socket closes with 4006, the others see it leave.
    let path = format!("/api/files/{}/kick", file.id);
    let r = send_json(
        &node,
        "POST",
        &path,
        Some(&key),
        &json!({"person": w_editor["you"]}),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["closed"], json!(1));
    editor.expect_close(4006).await;
    let left = owner.recv_type("leave", WAIT).await.expect("a leave");
    assert_eq!(left["ids"], json!([w_editor["you"]]));
    assert_eq!(people(&node, &key, &file.id, "").await["count"], json!(2));
    // Nobody by that id any more; bad bodies.
    let r = send_json(
        &node,
        "POST",
        &path,
        Some(&key),
        &json!({"person": w_editor["you"]}),
    )
    .await;
    assert_eq!(r.body()["closed"], json!(0));
    for bad in [
        json!({}),
        json!({"person": "x", "sub": "y"}),
        json!({"person": "not an id"}),
        json!({"sub": ""}),
    ] {
        send_json(&node, "POST", &path, Some(&key), &bad)
            .await
            .assert_error(400, "bad-request");
    }
    let huge = json!({"sub": "x".repeat(5000)});
    send_json(&node, "POST", &path, Some(&key), &huge)
        .await
        .assert_error(413, "too-large");
    viewer.expect_quiet(Duration::from_millis(100)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_rooms_are_listed_with_their_sizes() {
    let (node, _, key, _) = node_with_key(&[("ATRIUM_ROOM_REPORT_MS", "100")], &["server"]).await;
    let a = shared_file(&node, "edit").await;
    let b = shared_file(&node, "edit").await;
    let (_a1, _) = Client::join(&node, &a.id, &a.by_owner()).await;
    let (_a2, _) = Client::join(&node, &a.id, &a.by_edit_key()).await;
    let (_b1, _) = Client::join(&node, &b.id, &b.by_owner()).await;
    let mut rooms = Value::Null;
    for _ in 0..50 {
        let r = get(&node, "/api/server/rooms", Some(&key)).await;
        r.assert_status(200);
        rooms = r.body().clone();
        if rooms["people"] == json!(3) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(rooms["count"], json!(2), "{rooms}");
    assert_eq!(rooms["partial"], json!(false));
    let list = rooms["rooms"].as_array().unwrap();
    let size = |f: &str| list.iter().find(|r| r["file"] == f).unwrap()["people"].clone();
    assert_eq!(size(&a.id), json!(2));
    assert_eq!(size(&b.id), json!(1));
    assert_eq!(list[0]["node"], "local");
    // One to a page, in file id order.
    let first = get(&node, "/api/server/rooms?limit=1", Some(&key))
        .await
        .body()
        .clone();
    let next = s(&first["next"]).to_owned();
    let second = get(
        &node,
        &format!("/api/server/rooms?limit=1&after={next}"),
        Some(&key),
    )
    .await
    .body()
    .clone();
    assert!(second["next"].is_null());
    let mut ids = [a.id.clone(), b.id.clone()];
    ids.sort();
    assert_eq!(
        [
            first["rooms"][0]["file"].clone(),
            second["rooms"][0]["file"].clone()
        ],
        [json!(ids[0]), json!(ids[1])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kicking_a_sub_closes_every_socket_of_it_and_only_those() {
    use atrium_testkit::jwt::{self, Minter};
    const SECRET: &str = "a test HS256 secret, thirty-two bytes or more";
    let (node, _, key, _) = node_with_key(
        &[
            ("ATRIUM_APP_TOKEN_ISSUER", "https://app.example.test"),
            ("ATRIUM_APP_TOKEN_AUDIENCE", "atrium-test"),
            ("ATRIUM_APP_TOKEN_HS256_SECRET", SECRET),
        ],
        &["server"],
    )
    .await;
    let file = format!("kick_{}", &secret()[..10]);
    send_json(
        &node,
        "POST",
        "/api/server/files",
        Some(&key),
        &json!({"id": file}),
    )
    .await
    .assert_status(201);
    let token = |sub: &str| {
        let c = jwt::claims(
            "https://app.example.test",
            "atrium-test",
            sub,
            60,
            json!({ file.clone(): "edit" }),
        );
        Minter::hs256(SECRET.as_bytes()).sign(&c)
    };
    // Ann in two tabs, Bob in one.
    let (mut ann1, _) = Client::join(&node, &file, &Hello::token(&token("ann"))).await;
    let (mut ann2, _) = Client::join(&node, &file, &Hello::token(&token("ann"))).await;
    let (mut bob, _) = Client::join(&node, &file, &Hello::token(&token("bob"))).await;
    let listed = get(&node, &format!("/api/files/{file}/people"), Some(&key)).await;
    let subs: Vec<&str> = listed.body()["people"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| s(&p["sub"]))
        .collect();
    assert_eq!(subs.iter().filter(|s| **s == "ann").count(), 2);
    let r = send_json(
        &node,
        "POST",
        &format!("/api/files/{file}/kick"),
        Some(&key),
        &json!({"sub": "ann"}),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["closed"], json!(2));
    ann1.expect_close(4006).await;
    ann2.expect_close(4006).await;
    // Bob stays and can still edit.
    bob.patch_acked(1, vec![put("b", json!({}))]).await;
    let left = get(&node, &format!("/api/files/{file}/people"), Some(&key)).await;
    assert_eq!(left.body()["count"], json!(1));
}
