//! Other accounts' files are invisible.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_accounts_files_are_invisible() {
    let node = node(&[]).await;
    let alice = new_account(&node, "alice").await;
    let bob = new_account(&node, "bob").await;
    let mut alices = Vec::new();
    for (i, link) in ["none", "view", "edit"].into_iter().enumerate() {
        let f = create_file(&node, &alice, &format!("Alice {i}"), None).await;
        let id = s(&f["id"]).to_string();
        if link != "none" {
            set_link(&node, &alice, &id, link).await;
        }
        alices.push(id);
    }
    let bobs = s(&create_file(&node, &bob, "Bob's", None).await["id"]).to_string();

    let list = get(&node, "/api/files", Some(&bob)).await;
    list.assert_status(200);
    let ids: Vec<&str> = list.body()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| s(&f["id"]))
        .collect();
    assert_eq!(ids, vec![bobs.as_str()], "Bob's list");
    let list = get(&node, "/api/files", Some(&alice)).await;
    assert!(!list.text.contains(&bobs), "Alice sees Bob's file");

    let mut checked = 0;
    for id in &alices {
        // Whatever the link says, a token alone does not reach another's file.
        for (method, path) in [
            ("GET", format!("/api/files/{id}")),
            ("GET", format!("/api/files/{id}/doc")),
            ("PATCH", format!("/api/files/{id}")),
            ("POST", format!("/api/files/{id}/keys")),
            ("DELETE", format!("/api/files/{id}")),
        ] {
            let body =
                (method == "PATCH").then(|| json!({"name": "mine"}).to_string().into_bytes());
            let r = http(
                &node,
                method,
                &path,
                &[("authorization", &bearer(&bob))],
                body,
            )
            .await;
            r.assert_error(403, "forbidden");
            assert!(!r.text.contains("Alice"), "{}", r.text);
            checked += 1;
        }
        Client::join_expect_close(&node, id, &Hello::token(&bob), 4003).await;
        checked += 1;
    }
    // Alice's files are as they were.
    for id in &alices {
        let r = get(&node, &format!("/api/files/{id}"), Some(&alice)).await;
        r.assert_status(200);
        assert!(r.body()["name"].as_str().unwrap().starts_with("Alice"));
    }
    figure(json!({"case": "another account's files", "checks": checked}));
}
