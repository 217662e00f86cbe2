//! Who may read and change a file over HTTP, and the answers to everyone else.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_access_errors() {
    let node = Node::start(&[]).await;
    let other = new_account(&node, "other").await;
    let file = file_of(&node, new_account(&node, "owner").await, "Private", "none").await;
    let (owner, id, vk, ek) = (file.owner, file.id, file.view_key, file.edit_key);

    for path in [format!("/api/files/{id}"), format!("/api/files/{id}/doc")] {
        // No credentials at all: 401.
        get(&node, &path, None)
            .await
            .assert_error(401, "unauthorized");
        // Signed in, not the owner: 403.
        get(&node, &path, Some(&other))
            .await
            .assert_error(403, "forbidden");
        // A key while link is none: 403.
        get_with_key(&node, &path, &vk)
            .await
            .assert_error(403, "forbidden");
        // A key that matches neither of the file's keys is a bad credential: 401,
        // as a bad key closes a socket with 4001.
        get_with_key(&node, &path, &secret())
            .await
            .assert_error(401, "unauthorized");
    }
    // Unknown file: 404; bad id: 400.
    for path in ["/api/files/no-such-file", "/api/files/no-such-file/doc"] {
        get(&node, path, Some(&owner))
            .await
            .assert_error(404, "not-found");
    }
    let long = "a".repeat(65);
    for bad in ["a.b", long.as_str(), "a%20b"] {
        get(&node, &format!("/api/files/{bad}"), Some(&owner))
            .await
            .assert_error(400, "bad-request");
        get(&node, &format!("/api/files/{bad}/doc"), Some(&owner))
            .await
            .assert_error(400, "bad-request");
    }

    // PATCH / DELETE / keys: owner only.
    set_link(&node, &owner, &id, "edit").await;
    let patch_path = format!("/api/files/{id}");
    let keys_path = format!("/api/files/{id}/keys");
    let other_auth = bearer(&other);
    let (nobody, as_other, with_key) = (
        &[][..],
        &[("authorization", other_auth.as_str())][..],
        &[("x-atrium-key", ek.as_str())][..],
    );
    let rename = || Some(json!({"name": "x"}).to_string().into_bytes());
    let owner_only = [
        ("PATCH", &patch_path, nobody, rename(), 401),
        ("PATCH", &patch_path, as_other, rename(), 403),
        ("PATCH", &patch_path, with_key, rename(), 403),
        ("DELETE", &patch_path, as_other, None, 403),
        ("DELETE", &patch_path, nobody, None, 401),
        ("POST", &keys_path, as_other, None, 403),
        ("POST", &keys_path, nobody, None, 401),
        ("POST", &keys_path, with_key, None, 403),
    ];
    for (method, path, headers, body, status) in owner_only {
        let code = if status == 401 {
            "unauthorized"
        } else {
            "forbidden"
        };
        let r = http(&node, method, path, headers, body).await;
        r.assert_error(status, code);
    }

    // Bad bodies.
    let auth = bearer(&owner);
    http(
        &node,
        "PATCH",
        &patch_path,
        &[("authorization", &auth)],
        Some(b"name=x".to_vec()),
    )
    .await
    .assert_error(400, "bad-request");
    for bad in [
        json!({"link": "public"}),
        json!({"link": 1}),
        json!({"name": 7}),
    ] {
        patch_file(&node, Some(&owner), &id, &bad)
            .await
            .assert_error(400, "bad-request");
    }
    http(
        &node,
        "POST",
        "/api/files",
        &[("authorization", &auth)],
        Some(b"not json".to_vec()),
    )
    .await
    .assert_error(400, "bad-request");
    for bad_doc in [
        json!([1, 2]),
        json!("doc"),
        json!({"n1": 5}),
        json!({"../x": {}}),
        json!({"n1": {"p".repeat(65): 1}}),
    ] {
        create_file_answer(&node, &owner, "Bad", Some(bad_doc))
            .await
            .assert_error(400, "bad-request");
    }
    send_json(&node, "POST", "/api/files", None, &json!({"name": "x"}))
        .await
        .assert_error(401, "unauthorized");

    // Nothing above changed the file.
    let r = get(&node, &patch_path, Some(&owner)).await;
    r.assert_status(200);
    assert_eq!(r.body()["name"], "Private");
    assert_eq!(r.body()["link"], "edit");
    assert_eq!(r.body()["edit_key"], json!(ek));
    assert_eq!(list_files(&node, &owner).await.len(), 1);
}
