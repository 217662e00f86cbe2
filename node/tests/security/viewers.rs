//! Viewers and view keys: no message edits, no view key yields the edit key.

use super::*;

/// Sends a patch and returns the answer (skipping presence traffic, role
/// changes and other people's relayed patches).
async fn answer(c: &mut Client, id: u64, ops: Vec<Value>) -> Value {
    c.send_patch(id, ops).await;
    loop {
        let m = c.recv_json().await;
        if m["type"] != "patch" && m["type"] != "role" {
            return m;
        }
    }
}

fn assert_reject(m: &Value, id: u64, code: &str) {
    assert_eq!(m["type"], "reject", "expected a reject {code}, got {m}");
    assert_eq!(m["id"], json!(id), "{m}");
    assert_eq!(m["code"], code, "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_cannot_edit_by_any_message() {
    let node = node(&[]).await;
    let f = shared_file(&node, "view").await;
    let (mut owner, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    assert_eq!(
        owner.patch_acked(1, vec![put("a", json!({"x": 1}))]).await,
        1
    );

    // A viewer by view key, and an edit-key holder while the link is `view`.
    let viewer_hello = Hello::key(&f.view_key);
    let (mut viewer, wv) = Client::join(&node, &f.id, &viewer_hello).await;
    assert_eq!(wv["role"], "viewer");
    let edit_hello = Hello::key(&f.edit_key);
    let (mut held, we) = Client::join(&node, &f.id, &edit_hello).await;
    assert_eq!(
        (we["role"].clone(), we["reason"].clone()),
        (json!("viewer"), json!("view-link"))
    );
    // A signed-in stranger with the edit key: still a viewer.
    let stranger = new_account(&node, "stranger").await;
    let mut stranger_hello = Hello::token(&stranger);
    stranger_hello.key = Some(f.edit_key.clone());
    let (mut strange, ws) = Client::join(&node, &f.id, &stranger_hello).await;
    assert_eq!(ws["role"], "viewer");

    let mut tried = 0;
    for c in [&mut viewer, &mut held, &mut strange] {
        // Every kind of patch, an empty one, a huge op id, op id 1 (the
        // owner's first id), the same op again.
        for (id, ops) in [
            (1, vec![put("a", json!({"x": 666}))]),
            (1, vec![put("a", json!({"x": 666}))]),
            (2, vec![set("a", json!({"x": 666}))]),
            (3, vec![delete("a")]),
            (4, vec![]),
            (u64::MAX, vec![put("b", json!({}))]),
        ] {
            assert_reject(&answer(c, id, ops).await, id, "viewer");
            tried += 1;
        }
        // A second hello on the same socket, now with the edit key: refused,
        // and the socket is still a viewer.
        let mut again = Hello::key(&f.edit_key);
        again.token = Some(f.owner.clone());
        c.send_json(&again.to_json()).await;
        let m = c.recv_json().await;
        assert_eq!(
            (m["type"].clone(), m["code"].clone()),
            (json!("reject"), json!("invalid")),
            "{m}"
        );
        assert_reject(
            &answer(c, 5, vec![put("a", json!({"x": 666}))]).await,
            5,
            "viewer",
        );
        tried += 2;
    }
    // A new socket with the same client id as the edit-key holder and the
    // edit key again: replaces the old one, still a viewer.
    let (mut held2, w2) = Client::join(&node, &f.id, &edit_hello).await;
    held.expect_close(4010).await;
    assert_eq!(w2["role"], "viewer");
    assert_reject(&answer(&mut held2, 6, vec![delete("a")]).await, 6, "viewer");
    // The view key with the viewer's client id after the link became
    // `edit`: a view key never edits.
    set_link(&node, &f.owner, &f.id, "edit").await;
    assert_reject(
        &answer(&mut viewer, 7, vec![delete("a")]).await,
        7,
        "viewer",
    );
    let (mut viewer2, w3) = Client::join(&node, &f.id, &viewer_hello).await;
    viewer.expect_close(4010).await;
    assert_eq!(w3["role"], "viewer");
    assert_reject(
        &answer(&mut viewer2, 8, vec![delete("a")]).await,
        8,
        "viewer",
    );
    set_link(&node, &f.owner, &f.id, "view").await;

    // Over HTTP: key holders cannot change the file's settings or keys.
    for key in [&f.view_key, &f.edit_key] {
        for (method, path, body) in [
            (
                "PATCH",
                format!("/api/files/{}", f.id),
                Some(json!({"link": "edit"})),
            ),
            ("POST", format!("/api/files/{}/keys", f.id), None),
            ("DELETE", format!("/api/files/{}", f.id), None),
        ] {
            let body = body.map(|b| b.to_string().into_bytes());
            let r = http(&node, method, &path, &[("x-atrium-key", key)], body).await;
            assert!(
                r.status == 401 || r.status == 403,
                "{method} {path} with a key: {} {}",
                r.status,
                r.text
            );
            tried += 1;
        }
    }
    let r = send_json(
        &node,
        "PATCH",
        &format!("/api/files/{}", f.id),
        Some(&stranger),
        &json!({"link": "edit"}),
    )
    .await;
    r.assert_error(403, "forbidden");

    let (version, doc) = get_doc(&node, &f.owner, &f.id).await;
    assert_eq!(
        (version, doc),
        (1, json!({"a": {"x": 1}})),
        "a viewer changed the file"
    );
    let file = get(&node, &format!("/api/files/{}", f.id), Some(&f.owner)).await;
    assert_eq!(file.body()["link"], "view", "a key holder changed the link");
    figure(json!({"case": "a viewer cannot edit", "attempts": tried, "changed": 0}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_key_never_yields_edit_nor_the_edit_key() {
    let node = node(&[]).await;
    let f = shared_file(&node, "edit").await;
    let stranger = new_account(&node, "stranger").await;
    let mut checked = 0;
    for link in ["view", "edit"] {
        set_link(&node, &f.owner, &f.id, link).await;
        // As a guest and signed in, joining and re-joining.
        let mut signed = Hello::token(&stranger);
        signed.key = Some(f.view_key.clone());
        for hello in [Hello::key(&f.view_key), signed] {
            for _ in 0..2 {
                let (c, w) = Client::join(&node, &f.id, &hello).await;
                assert_eq!(w["role"], "viewer", "link {link}: {w}");
                assert!(w.get("reason").is_none_or(Value::is_null), "{w}");
                c.close().await;
                checked += 1;
            }
        }
        // HTTP: the file is readable with the view key, the keys are not shown.
        for r in [
            get_with_key(&node, &format!("/api/files/{}", f.id), &f.view_key).await,
            get_with_key(&node, &format!("/api/files/{}", f.id), &f.edit_key).await,
            http(
                &node,
                "GET",
                &format!("/api/files/{}", f.id),
                &[
                    ("authorization", &bearer(&stranger)),
                    ("x-atrium-key", &f.view_key),
                ],
                None,
            )
            .await,
        ] {
            r.assert_status(200);
            let body = r.body();
            assert!(
                body.get("view_key").is_none() && body.get("edit_key").is_none(),
                "keys shown to a key holder: {}",
                r.text
            );
            assert!(
                !r.text.contains(&f.edit_key) && !r.text.contains(&f.view_key),
                "{}",
                r.text
            );
            checked += 1;
        }
    }
    figure(json!({"case": "a view key never yields edit", "checks": checked}));
}
