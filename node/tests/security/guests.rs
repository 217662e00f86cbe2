//! Guests without a key: a private file stays closed on every route.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_without_a_key_cannot_read_a_private_file() {
    let node = node(&[]).await;
    let f = shared_file(&node, "none").await;
    let (mut owner, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    owner
        .patch_acked(1, vec![put("secret", json!({"text": "the plan"}))])
        .await;
    let paths = [
        format!("/api/files/{}", f.id),
        format!("/api/files/{}/doc", f.id),
    ];
    let mut checked = 0;

    // No key, an empty key, a made-up key, a key of another file.
    let other = shared_file(&node, "edit").await;
    for link in ["none", "view", "edit"] {
        set_link(&node, &f.owner, &f.id, link).await;
        for path in &paths {
            let r = get(&node, path, None).await;
            r.assert_error(401, "unauthorized");
            for key in [secret(), other.view_key.clone(), other.edit_key.clone()] {
                let r = get_with_key(&node, path, &key).await;
                r.assert_error(401, "unauthorized");
                assert!(!r.text.contains("the plan"));
                checked += 1;
            }
        }
        for hello in [
            Hello::anonymous(),
            Hello {
                key: Some(String::new()),
                ..Hello::anonymous()
            },
            Hello::key(&secret()),
            Hello::key(&other.edit_key),
        ] {
            Client::join_expect_close(&node, &f.id, &hello, 4001).await;
            checked += 1;
        }
    }
    // The file's own keys while the link is `none`: 403 and 4003.
    set_link(&node, &f.owner, &f.id, "none").await;
    let keys = [f.view_key.as_str(), f.edit_key.as_str()];
    checked += refused_everywhere(&node, &f.id, &paths, &keys, (403, "forbidden"), 4003).await;
    // Rotated-out keys: 401 and 4001.
    set_link(&node, &f.owner, &f.id, "edit").await;
    let r = send_empty(
        &node,
        "POST",
        &format!("/api/files/{}/keys", f.id),
        Some(&f.owner),
    )
    .await;
    r.assert_status(200);
    checked += refused_everywhere(&node, &f.id, &paths, &keys, (401, "unauthorized"), 4001).await;
    figure(json!({"case": "a guest without a key cannot read", "checks": checked}));
}

/// Each key is refused on every path with `error` and at the socket with `close`;
/// how many checks that made.
async fn refused_everywhere(
    node: &Node,
    file: &str,
    paths: &[String],
    keys: &[&str],
    error: (u16, &str),
    close: u16,
) -> usize {
    let mut checked = 0;
    for key in keys {
        for path in paths {
            get_with_key(node, path, key)
                .await
                .assert_error(error.0, error.1);
            checked += 1;
        }
        Client::join_expect_close(node, file, &Hello::key(key), close).await;
        checked += 1;
    }
    checked
}
