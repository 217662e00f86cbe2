//! Files: creating, listing (with its ETag), reading a file and its doc.

use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_create_list_get_doc() {
    let node = Node::start(&[]).await;
    let owner = new_account(&node, "owner").await;
    let other = new_account(&node, "other").await;
    let before = now_ms();

    // Without an initial doc.
    let empty = create_file(&node, &owner, "Empty", None).await;
    assert_id(&empty["id"]);
    assert_eq!(empty["name"], "Empty");
    assert_eq!(empty["link"], "none");
    assert_eq!(empty["version"], 0);
    let (vk, ek) = (s(&empty["view_key"]), s(&empty["edit_key"]));
    assert!(vk.len() >= 22 && ek.len() >= 22 && vk != ek, "{empty}");
    let (v, doc) = get_doc(&node, &owner, s(&empty["id"])).await;
    assert_eq!((v, doc), (0, json!({})));

    // With one.
    let initial = json!({
        "p1": {"type": "page", "name": "Cover"},
        "r1": {"page": "p1", "x": 10, "y": -2.5, "fill": "#f00", "tags": ["a", {"b": null}]}
    });
    let full = create_file(&node, &owner, "Full", Some(initial.clone())).await;
    assert_eq!(full["version"], 0);
    let full_id = s(&full["id"]).to_string();
    let (v, doc) = get_doc(&node, &owner, &full_id).await;
    assert_eq!((v, doc), (0, initial));

    // Another account's file.
    let theirs = create_file(&node, &other, "Theirs", None).await;

    // Listing: own files only, with the listed fields.
    let r = get(&node, "/api/files", Some(&owner)).await;
    r.assert_status(200);
    let files = r.body()["files"].as_array().expect("files").clone();
    let mut ids: Vec<&str> = files.iter().map(|f| s(&f["id"])).collect();
    ids.sort();
    let mut want = vec![s(&empty["id"]), full_id.as_str()];
    want.sort();
    assert_eq!(ids, want, "{}", r.text);
    for f in &files {
        assert!(f["name"].is_string(), "{f}");
        assert_eq!(f["version"], 0, "{f}");
        assert_eq!(f["link"], "none", "{f}");
        let t = f["updated_at"].as_u64().expect("updated_at in ms");
        assert!(
            t + 60_000 >= before && t <= now_ms() + 60_000,
            "updated_at must be ms since the epoch: {t}"
        );
        assert!(
            f.get("edit_key").is_none() && f.get("view_key").is_none(),
            "{f}"
        );
    }
    let listed = list_files(&node, &other).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], theirs["id"]);
    get(&node, "/api/files", None)
        .await
        .assert_error(401, "unauthorized");

    // ETag and If-None-Match.
    let r = get(&node, "/api/files", Some(&owner)).await;
    let etag = r.header("etag").expect("GET /api/files has an ETag");
    let auth = bearer(&owner);
    let conditional = [
        ("authorization", auth.as_str()),
        ("if-none-match", etag.as_str()),
    ];
    let r = http(&node, "GET", "/api/files", &conditional, None).await;
    r.assert_status(304);
    // A change makes the old tag stale.
    patch_file(&node, Some(&owner), &full_id, &json!({"name": "Renamed"}))
        .await
        .assert_status(200);
    let r = http(&node, "GET", "/api/files", &conditional, None).await;
    r.assert_status(200);
    assert_ne!(
        r.header("etag"),
        Some(etag),
        "ETag must change with the list"
    );
    assert!(r.text.contains("Renamed"), "{}", r.text);

    // GET one: the owner sees the keys and the owner id.
    let me = get(&node, "/api/me", Some(&owner)).await;
    let owner_id = me.body()["account"]["id"].clone();
    let r = get(&node, &format!("/api/files/{full_id}"), Some(&owner)).await;
    r.assert_status(200);
    let f = r.body();
    assert_eq!(f["id"], json!(full_id));
    assert_eq!(f["name"], "Renamed");
    assert_eq!(f["link"], "none");
    assert_eq!(f["version"], 0);
    assert_eq!(f["owner"], owner_id, "{f}");
    assert_eq!(f["view_key"], full["view_key"]);
    assert_eq!(f["edit_key"], full["edit_key"]);

    // A key holder sees the file but not the keys.
    set_link(&node, &owner, &full_id, "view").await;
    let file_path = format!("/api/files/{full_id}");
    let r = get_with_key(&node, &file_path, s(&full["view_key"])).await;
    r.assert_status(200);
    let f = r.body();
    assert_eq!(f["id"], json!(full_id));
    assert_eq!(f["owner"], owner_id, "{f}");
    assert!(
        f.get("view_key").is_none_or(Value::is_null)
            && f.get("edit_key").is_none_or(Value::is_null),
        "keys are for the owner only: {f}"
    );
    let r = get_with_key(&node, &format!("{file_path}/doc"), s(&full["edit_key"])).await;
    r.assert_status(200);
    assert_eq!(r.body()["version"], 0);
}
