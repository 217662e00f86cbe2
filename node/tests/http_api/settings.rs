//! A file's name, link and keys: renaming, deleting and rotating keys.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_link_and_delete() {
    let node = Node::start(&[]).await;
    let file = file_of(&node, new_account(&node, "owner").await, "First", "none").await;
    let (owner, id, view_key) = (file.owner, file.id, file.view_key);
    let path = format!("/api/files/{id}");

    let r = patch_file(&node, Some(&owner), &id, &json!({"name": "Second"})).await;
    r.assert_status(200);
    assert_eq!(r.body()["name"], "Second");
    assert_eq!(r.body()["id"], json!(id));
    assert_eq!(r.body()["link"], "none");

    for link in ["view", "edit", "none", "edit"] {
        set_link(&node, &owner, &id, link).await;
        let r = get(&node, &path, Some(&owner)).await;
        assert_eq!(r.body()["link"], json!(link));
        assert_eq!(r.body()["name"], "Second");
    }
    let rename_and_link = json!({"name": "Third", "link": "view"});
    let r = patch_file(&node, Some(&owner), &id, &rename_and_link).await;
    r.assert_status(200);
    assert_eq!(
        (r.body()["name"].clone(), r.body()["link"].clone()),
        (json!("Third"), json!("view"))
    );

    // Live sockets close with 4004 when the file is deleted.
    let (mut owner_sock, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (mut guest_sock, _) = Client::join(&node, &id, &Hello::key(&view_key)).await;
    owner_sock.patch_acked(1, vec![put("a", json!({}))]).await;
    send_empty(&node, "DELETE", &path, Some(&owner))
        .await
        .assert_status(204);
    owner_sock.expect_close(4004).await;
    guest_sock.expect_close(4004).await;

    get(&node, &path, Some(&owner))
        .await
        .assert_error(404, "not-found");
    get(&node, &format!("{path}/doc"), Some(&owner))
        .await
        .assert_error(404, "not-found");
    send_empty(&node, "DELETE", &path, Some(&owner))
        .await
        .assert_error(404, "not-found");
    patch_file(&node, Some(&owner), &id, &json!({"name": "Back"}))
        .await
        .assert_error(404, "not-found");
    Client::join_expect_close(&node, &id, &Hello::token(&owner), 4004).await;
    assert_eq!(list_files(&node, &owner).await, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_retires_old_keys() {
    let node = Node::start(&[]).await;
    let f = shared_file(&node, "edit").await;
    let (owner, id, old_vk, old_ek) = (f.owner, f.id, f.view_key, f.edit_key);

    let (mut by_edit, _) = Client::join(&node, &id, &Hello::key(&old_ek)).await;
    let (mut by_view, _) = Client::join(&node, &id, &Hello::key(&old_vk)).await;
    let (mut by_owner, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    get_with_key(&node, &format!("/api/files/{id}/doc"), &old_vk)
        .await
        .assert_status(200);

    let r = rotate_keys(&node, &owner, &id).await;
    r.assert_status(200);
    let new_vk = s(&r.body()["view_key"]).to_string();
    let new_ek = s(&r.body()["edit_key"]).to_string();
    assert!(
        new_vk != old_vk && new_ek != old_ek && new_vk != new_ek,
        "{}",
        r.text
    );

    by_edit.expect_close(4003).await;
    by_view.expect_close(4003).await;
    // The owner's socket is unaffected.
    assert_eq!(by_owner.patch_acked(1, vec![put("a", json!({}))]).await, 1);

    get_with_key(&node, &format!("/api/files/{id}/doc"), &old_vk)
        .await
        .assert_error(401, "unauthorized");
    Client::join_expect_close(&node, &id, &Hello::key(&old_ek), 4001).await;

    let r = get(&node, &format!("/api/files/{id}"), Some(&owner)).await;
    assert_eq!(r.body()["view_key"], json!(new_vk));
    assert_eq!(r.body()["edit_key"], json!(new_ek));
    let (_c, w) = Client::join(&node, &id, &Hello::key(&new_ek)).await;
    assert_eq!(w["role"], "editor");
    assert_eq!(w["version"], 1);
    get_with_key(&node, &format!("/api/files/{id}/doc"), &new_vk)
        .await
        .assert_status(200);
}

/// Every change of a file's link reaches everyone in it (a narrowed link sends each guest
/// their new role): an owner toggling it in a loop made the node send 116 bytes for each one
/// received, to 99 sockets, a whole core busy (the fourth review). Changes are limited per
/// file, settings and new keys together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_changes_are_rate_limited_per_file() {
    let node = Node::start(&[("ATRIUM_FILE_CHANGES_PER_MINUTE", "3")]).await;
    let f = file_of(&node, new_account(&node, "owner").await, "First", "none").await;
    let (owner, id) = (f.owner.clone(), f.id.clone());
    for link in ["view", "edit"] {
        patch_file(&node, Some(&owner), &id, &json!({"link": link}))
            .await
            .assert_status(200);
    }
    rotate_keys(&node, &owner, &id).await.assert_status(200);
    let r = patch_file(&node, Some(&owner), &id, &json!({"link": "view"})).await;
    r.assert_error(429, "rate-limited");
    assert!(r.header("retry-after").is_some(), "{}", r.text);
    rotate_keys(&node, &owner, &id)
        .await
        .assert_error(429, "rate-limited");
    let other = file_of(&node, owner.clone(), "Other", "none").await;
    patch_file(&node, Some(&owner), &other.id, &json!({"link": "edit"}))
        .await
        .assert_status(200);
}
