//! Capacity: one account's caps bite before anyone else's.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_account_cannot_exhaust_the_socket_capacity_of_others() {
    let node = node(&[]).await;
    let f = shared_file(&node, "edit").await;
    let hog = new_account(&node, "hog").await;
    let mut hog_hello = Hello::token(&hog);
    hog_hello.key = Some(f.edit_key.clone());

    // Ten sockets (the default cap) for the hog; the eleventh and more: 4029.
    let mut held = Vec::new();
    for _ in 0..10 {
        let h = Hello {
            client: secret(),
            ..hog_hello.clone()
        };
        held.push(Client::join(&node, &f.id, &h).await.0);
    }
    for _ in 0..5 {
        let h = Hello {
            client: secret(),
            ..hog_hello.clone()
        };
        Client::join_expect_close(&node, &f.id, &h, 4029).await;
    }
    // Everyone else still gets in: the owner, another account, a guest.
    let other = new_account(&node, "other").await;
    let mut other_hello = Hello::token(&other);
    other_hello.key = Some(f.edit_key.clone());
    for hello in [Hello::token(&f.owner), other_hello, Hello::key(&f.view_key)] {
        let (c, w) = Client::join(&node, &f.id, &hello).await;
        assert_eq!(w["type"], "welcome");
        c.close().await;
    }
    // The hog's slot comes back when one of its sockets goes.
    held.pop().unwrap().close().await;
    let h = Hello {
        client: secret(),
        ..hog_hello.clone()
    };
    Client::join_when_freed(&node, &f.id, &h, 4029, Duration::from_secs(5)).await;
}

/// Files per account: a creation rate (the review's 60 creates in a burst all
/// answered 201) and a cap on files owned, each with an error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_account_cannot_make_files_without_bound() {
    let node = node(&[
        ("ATRIUM_FILE_CREATES_PER_MINUTE", "30"),
        ("ATRIUM_FILES_PER_ACCOUNT", "40"),
    ])
    .await;
    let token = new_account(&node, "maker").await;
    let create = |name: String| {
        let node = &node;
        let token = token.clone();
        async move {
            send_json(
                node,
                "POST",
                "/api/files",
                Some(&token),
                &json!({"name": name}),
            )
            .await
        }
    };
    // A burst of 60: the first 30 (the burst) land, the rest are 429 with Retry-After.
    let mut created = 0;
    let mut limited = 0;
    for i in 0..60 {
        let r = create(format!("Burst {i}")).await;
        match r.status {
            201 => created += 1,
            429 => {
                r.assert_error(429, "rate-limited");
                let wait: u64 = r
                    .header("retry-after")
                    .and_then(|v| v.parse().ok())
                    .expect("Retry-After in seconds");
                assert!((1..=2).contains(&wait), "one token every 2 s: {wait}");
                limited += 1;
            }
            other => panic!("unexpected {other}: {}", r.text),
        }
    }
    assert_eq!((created, limited), (30, 30), "a burst of 30, then 429");
    // Another account is not affected.
    let other = new_account(&node, "other").await;
    send_json(
        &node,
        "POST",
        "/api/files",
        Some(&other),
        &json!({"name": "Mine"}),
    )
    .await
    .assert_status(201);

    // The cap: with the rate waited out, creation stops at 40 files owned.
    let started = Instant::now();
    while created < 40 {
        let r = create(format!("Slow {created}")).await;
        if r.status == 201 {
            created += 1;
        } else {
            r.assert_error(429, "rate-limited");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(started.elapsed() < Duration::from_secs(40), "rate too slow");
    }
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let r = create("One too many".into()).await;
    r.assert_error(403, "too-many-files");
    assert!(
        r.body()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("40")),
        "{}",
        r.text
    );
    let list = get(&node, "/api/files", Some(&token)).await;
    assert_eq!(list.body()["files"].as_array().map(Vec::len), Some(40));
    // Deleting one makes room.
    let id = s(&list.body()["files"][0]["id"]).to_string();
    send_empty(&node, "DELETE", &format!("/api/files/{id}"), Some(&token))
        .await
        .assert_status(204);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    create("Room again".into()).await.assert_status(201);
    figure(
        json!({"case": "files per account", "burst_created": 30, "burst_limited": 30, "cap": 40}),
    );
}

/// Text that does not compress much (hex of random bytes), `n` bytes long.
fn noise(n: usize) -> String {
    let mut s = String::new();
    while s.len() < n {
        s.push_str(&secret());
    }
    s.truncate(n);
    s
}

/// Storage per account: one free account cannot fill the disk every file shares. At its
/// limit, creations, named versions and restores answer 403 `storage-full` and patches
/// that grow a document are refused; deleting makes room again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_account_cannot_fill_the_disk() {
    let node = node(&[("ATRIUM_STORAGE_PER_ACCOUNT", "56K")]).await;
    let token = new_account(&node, "filler").await;
    let create = |doc: Value| {
        let (node, token) = (&node, token.clone());
        async move {
            let body = json!({"name": "Big", "doc": doc});
            send_json(node, "POST", "/api/files", Some(&token), &body).await
        }
    };
    let name = |id: String, title: &'static str| {
        let (node, token) = (&node, token.clone());
        async move {
            let versions = format!("/api/files/{id}/versions");
            send_json(
                node,
                "POST",
                &versions,
                Some(&token),
                &json!({"title": title}),
            )
            .await
        }
    };
    let restore = |id: String, vid: u64| {
        let (node, token) = (&node, token.clone());
        async move {
            let restore = format!("/api/files/{id}/versions/{vid}/restore");
            send_json(node, "POST", &restore, Some(&token), &json!({})).await
        }
    };
    let first = create(json!({"a": {"blob": "small"}})).await;
    first.assert_status(201);
    let id = s(&first.body()["id"]).to_string();
    // A version of the small document fits.
    let zero = name(id.clone(), "Zero").await;
    zero.assert_status(201);
    let zero = zero.body()["id"].as_u64().expect("version id");

    // In the room: 40 KB in a patch fits; a patch that would grow the document past the
    // limit is refused with `too-large`; one that does not grow it lands.
    let (mut c, _) = Client::join(&node, &id, &Hello::token(&token)).await;
    c.patch_acked(1, vec![put("a", json!({"blob": noise(40_000)}))])
        .await;
    c.send_patch(2, vec![put("c", json!({"blob": noise(30_000)}))])
        .await;
    let reject = c.await_reject(json!(2)).await;
    assert_eq!(reject["code"], "too-large", "{reject}");
    assert!(
        reject["message"]
            .as_str()
            .is_some_and(|m| m.contains("storage")),
        "{reject}"
    );
    c.patch_acked(3, vec![set("a", json!({"x": 1}))]).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await; // past a measure's reuse

    // 40 KB kept: a 30 KB document does not fit in 56 KiB; a small one does.
    let refused = create(json!({"b": {"blob": noise(30_000)}})).await;
    refused.assert_error(403, "storage-full");
    create(json!({"b": {"blob": noise(1_000)}}))
        .await
        .assert_status(201);

    // A named version would keep the 40 KB document again (compressed, most of it): it
    // is refused once its size is known (it used to be kept, one version past the limit).
    name(id.clone(), "One")
        .await
        .assert_error(403, "storage-full");
    // Restoring the small version shrinks the document, and keeps the 40 KB one as the
    // version before the restore (a restore stays undoable, whatever it keeps).
    restore(id.clone(), zero).await.assert_status(200);
    tokio::time::sleep(Duration::from_millis(1_100)).await; // past a measure's reuse
                                                            // Restoring that version would grow the document by 40 KB again: refused.
    restore(id.clone(), zero + 1)
        .await
        .assert_error(403, "storage-full");
    // Past the limit even a small growth waits for room.
    c.send_patch(4, vec![put("d", json!({"x": 1}))]).await;
    let reject = loop {
        // The restore's patch and the versions saved meanwhile come to the room first.
        let m = c.recv_json().await;
        if !["version", "patch", "restored"].contains(&m["type"].as_str().unwrap_or("")) {
            break m;
        }
    };
    assert_eq!(
        (&reject["type"], &reject["code"]),
        (&json!("reject"), &json!("too-large")),
        "{reject}"
    );
    // Not a panic or a closed socket: the same socket still deletes.
    c.patch_acked(5, vec![delete("b")]).await;
    c.close().await;

    // Another account is not affected.
    let other = new_account(&node, "other").await;
    let body = json!({"name": "Mine", "doc": {"a": {"blob": noise(30_000)}}});
    send_json(&node, "POST", "/api/files", Some(&other), &body)
        .await
        .assert_status(201);

    // Deleting the big file (its document, log and versions) makes room.
    send_empty(&node, "DELETE", &format!("/api/files/{id}"), Some(&token))
        .await
        .assert_status(204);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    create(json!({"b": {"blob": noise(30_000)}}))
        .await
        .assert_status(201);
    let text = metrics_text(&node).await;
    for what in ["create", "version", "restore", "patch"] {
        let n = metric(&text, "atrium_storage_refusals_total", &[("what", what)]);
        assert!(n >= 1.0, "{what}: {n}");
    }
    figure(
        json!({"case": "storage per account", "limit": 57344, "refused": ["create", "patch", "version", "restore"]}),
    );
}

/// A guest with the edit key who says hello with a new client id before each patch (an
/// empty one will do) made the store keep a row of op ids per id, for as long as the file,
/// counted nowhere (the twelfth review: about 27 MB an hour from one address). Each
/// writer's row now counts in the owner's storage, so the link's share bounds them; a new
/// writer at the limit may still delete, and the owner goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_client_ids_count_in_the_owners_storage() {
    // The link's share, 16 KiB, is 128 rows of 128 bytes.
    let node = node(&[("ATRIUM_STORAGE_PER_ACCOUNT", "32K")]).await;
    let f = shared_file(&node, "edit").await;
    let (mut owner, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    owner
        .patch_acked(1, vec![put("old", json!({"text": noise(400)}))])
        .await;
    let mut writers = 0;
    let reject = loop {
        let (mut guest, _) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
        guest.send_patch(1, vec![]).await;
        let m = guest.recv_json().await;
        guest.close().await;
        if m["type"] != "ack" {
            break m;
        }
        writers += 1;
        assert!(writers <= 128, "{writers} new writers kept a row each");
    };
    assert_eq!(reject["code"], "too-large", "{reject}");
    assert!(
        reject["message"]
            .as_str()
            .is_some_and(|m| m.contains("share")),
        "{reject}"
    );
    assert!(
        writers >= 100,
        "only {writers} new writers before the share was used"
    );
    // A new writer at the limit may still delete: a patch that frees its row's worth lands.
    let (mut guest, _) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    guest.patch_acked(1, vec![delete("old")]).await;
    guest.close().await;
    // The owner's own patches go on to the whole limit.
    owner
        .patch_acked(2, vec![put("mine", json!({"text": noise(1_000)}))])
        .await;
    owner.close().await;
    figure(json!({
        "case": "new client ids, an empty patch each, from a guest with the edit key",
        "limit": 32_768, "link_share": 16_384, "row_bytes": 128, "writers_before_refusal": writers,
    }));
}

/// A named version of an unchanged document stores a few bytes of delta, but keeps its title
/// and description (up to about 8 KB) for good: a guest with the edit key naming versions
/// filled the disk outside the owner's storage (the twelfth review: about 125 MB a day per
/// file). Each version's text and row now count, so the link's share bounds them; renaming
/// needs the storage for what it adds too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_text_of_named_versions_counts_in_the_owners_storage() {
    let node = node(&[
        ("ATRIUM_STORAGE_PER_ACCOUNT", "128K"),
        ("ATRIUM_VERSIONS_NAMED_PER_MINUTE", "1000"),
    ])
    .await;
    let f = shared_file(&node, "edit").await;
    let versions = format!("/api/files/{}/versions", f.id);
    let key = [("x-atrium-key", f.edit_key.as_str())];
    // About 6.6 KB of text a version: 200 and 2,000 characters of three bytes each.
    let naming = |n: usize| json!({"title": format!("{n}{}", "字".repeat(190)), "description": "字".repeat(2_000)});
    // The first with a short title alone, to be renamed below.
    let short = Some(json!({"title": "short"}).to_string().into_bytes());
    http(&node, "POST", &versions, &key, short)
        .await
        .assert_status(201);
    let mut answers = Vec::new();
    for n in 0..40 {
        let body = Some(naming(n).to_string().into_bytes());
        let r = http(&node, "POST", &versions, &key, body).await;
        if !named_within_the_share(&r, &mut answers) {
            break;
        }
    }
    let named = answers.iter().filter(|s| **s == 201).count();
    assert!(
        (5..=10).contains(&named) && answers.last() == Some(&403),
        "the guest's namings of an unchanged document: {answers:?}"
    );
    // A rename that lengthens a version's text by more than a naming keeps is held to the
    // share as well: 8,000 bytes of description for the short one.
    let list = http(&node, "GET", &versions, &key, None).await;
    let oldest = list.body()["versions"]
        .as_array()
        .and_then(|v| v.last().cloned());
    let first = oldest.and_then(|v| v["id"].as_u64()).expect("a version");
    let path = format!("{versions}/{first}");
    let longer = json!({"description": "😀".repeat(2_000)});
    let r = http(
        &node,
        "PATCH",
        &path,
        &key,
        Some(longer.to_string().into_bytes()),
    )
    .await;
    r.assert_error(403, "storage-full");
    // The owner still names versions, within the whole limit.
    name_as(&node, &f.id, &f.owner, "the owner's")
        .await
        .assert_status(201);
    figure(json!({
        "case": "a guest names versions of an unchanged document with long text",
        "limit": 131_072, "link_share": 65_536, "text_bytes_each": 6_600, "guest_named": named,
    }));
}

/// A guest with the edit key of a public file can name versions, and each keeps a
/// document, and can grow the document: the link's guests together fill at most half of
/// the owner's storage, so the owner still has room to work (the ninth review: a guest
/// filled the owner's quota with named versions, and the owner's other files could no
/// longer grow; the tenth: with growing patches).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_with_the_link_fill_at_most_half_the_owners_storage() {
    let node = node(&[("ATRIUM_STORAGE_PER_ACCOUNT", "256K")]).await;
    let f = shared_file(&node, "edit").await;
    let versions = format!("/api/files/{}/versions", f.id);
    let key = [("x-atrium-key", f.edit_key.as_str())];
    let (mut guest, _) = Client::join(&node, &f.id, &Hello::key(&f.edit_key)).await;
    // Each round the guest rewrites 30 KB of the document and names it: a version that
    // keeps about that much again.
    let mut answers = Vec::new();
    for round in 0..12u64 {
        guest
            .patch_acked(round + 1, vec![put("blob", json!({"text": noise(30_000)}))])
            .await;
        let body = Some(
            json!({"title": format!("round {round}")})
                .to_string()
                .into_bytes(),
        );
        let r = http(&node, "POST", &versions, &key, body).await;
        if !named_within_the_share(&r, &mut answers) {
            break;
        }
    }
    // Patches that grow the document stop at the link's share too (the tenth review: a
    // guest's growing patches filled the rest, and the owner's private files could not grow).
    let mut grown = 0;
    let reject = loop {
        let id = 100 + grown;
        guest
            .send_patch(
                id,
                vec![put(&format!("g{id}"), json!({"text": noise(20_000)}))],
            )
            .await;
        let m = guest.recv_json().await;
        match m["type"].as_str() {
            Some("ack") => grown += 1,
            Some("version") => continue,
            _ => break m,
        }
        assert!(
            grown < 20,
            "the guest grew the document by {grown} nodes of 20 KB"
        );
    };
    assert_eq!(reject["code"], "too-large", "{reject}");
    assert!(
        reject["message"]
            .as_str()
            .is_some_and(|m| m.contains("share")),
        "{reject}"
    );
    guest.close().await;
    // The owner's own growth goes on, to the whole limit.
    let (mut owner, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    owner
        .patch_acked(1, vec![put("mine", json!({"text": noise(20_000)}))])
        .await;
    owner.close().await;
    let named = answers.iter().filter(|s| **s == 201).count();
    assert!(
        (2..12).contains(&named) && answers.last() == Some(&403),
        "the guest's namings: {answers:?}"
    );
    // What the owner keeps is still under the whole limit, and the owner names and
    // restores as before.
    let mine = name_as(&node, &f.id, &f.owner, "the owner's").await;
    mine.assert_status(201);
    let vid = mine.body()["id"].as_u64().expect("version id");
    let restore = format!("{versions}/{vid}/restore");
    send_json(&node, "POST", &restore, Some(&f.owner), &json!({}))
        .await
        .assert_status(200);
    let list = get(&node, &versions, Some(&f.owner)).await;
    list.assert_status(200);
    figure(json!({
        "case": "a guest names versions of a public file",
        "limit": 262_144, "guest_named": named, "guest_answers": answers,
        "guest_grew_by_20kb_nodes": grown,
        "owner": "grew the document, named and restored after",
    }));
}

/// The app's own files (made by the server API) belong to an account with no storage limit,
/// so a guest with the edit link of one named versions without end, and nobody could
/// delete them: the owner never signs in (the fifteenth review: 40 of 40 named versions of
/// 30 KB past a 256 KiB limit). Each of the app's files now holds the link's guests to half
/// the limit of its own bytes, and the app's server deletes versions with its API key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_of_the_apps_own_files_are_held_to_a_share_and_the_app_deletes_their_versions() {
    let admin = unique_email("admin");
    let node = node(&[
        ("ATRIUM_STORAGE_PER_ACCOUNT", "256K"),
        ("ATRIUM_VERSIONS_NAMED_PER_MINUTE", "1000"),
        ("ATRIUM_ADMINS", admin.as_str()),
    ])
    .await;
    let (session, _) = signup(&node, &admin).await;
    let (server, _) = make_key(&node, &session, &["server"]).await;
    let (revoker, _) = make_key(&node, &session, &["revoke"]).await;
    let make = |id: String| app_file(&node, &server, id);
    let (id, other) = (
        format!("board_{}", &secret()[..8]),
        format!("other_{}", &secret()[..8]),
    );
    let made = make(id.clone()).await;
    made.assert_status(201);
    make(other.clone()).await.assert_status(201);
    let edit_key = made.body()["edit_key"]
        .as_str()
        .expect("edit key")
        .to_owned();
    let versions = format!("/api/files/{id}/versions");
    let key = [("x-atrium-key", edit_key.as_str())];
    let (mut guest, _) = Client::join(&node, &id, &Hello::key(&edit_key)).await;
    let mut answers = Vec::new();
    for round in 0..16u64 {
        guest
            .patch_acked(round + 1, vec![put("blob", json!({"text": noise(30_000)}))])
            .await;
        let title = json!({"title": format!("round {round}")}).to_string();
        let r = http(&node, "POST", &versions, &key, Some(title.into_bytes())).await;
        if !named_within_the_share(&r, &mut answers) {
            break;
        }
    }
    let named = answers.iter().filter(|s| **s == 201).count();
    assert!(
        (1..8).contains(&named) && answers.last() == Some(&403),
        "the guest's namings of the app's file: {answers:?}"
    );
    // The app itself is not held: its server names a version and patches the file.
    let mine = send_json(
        &node,
        "POST",
        &versions,
        Some(&server),
        &json!({"title": "app's"}),
    )
    .await;
    mine.assert_status(201);
    server_patch(
        &node,
        &server,
        &id,
        "app-1",
        vec![put("app", json!({"text": noise(30_000)}))],
    )
    .await
    .assert_status(200);
    // Another of the app's files has its guests' share whole.
    let other_key = get(&node, &format!("/api/files/{other}"), Some(&server)).await;
    other_key.assert_status(200);
    let other_edit = other_key.body()["edit_key"]
        .as_str()
        .expect("key")
        .to_owned();
    let body = Some(json!({"title": "elsewhere"}).to_string().into_bytes());
    let other_versions = format!("/api/files/{other}/versions");
    http(
        &node,
        "POST",
        &other_versions,
        &[("x-atrium-key", other_edit.as_str())],
        body,
    )
    .await
    .assert_status(201);
    // The app's server lists the versions and deletes the guest's; a key without the
    // `server` scope may not, nor may the guest.
    let list = get(&node, &versions, Some(&server)).await;
    list.assert_status(200);
    let theirs: Vec<u64> = list.body()["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .filter(|v| v["kind"] == "named" && v["title"] != "app's")
        .filter_map(|v| v["id"].as_u64())
        .collect();
    assert_eq!(theirs.len(), named, "{}", list.text);
    let first = format!("{versions}/{}", theirs[0]);
    http(&node, "DELETE", &first, &key, None)
        .await
        .assert_error(403, "forbidden");
    send_json(&node, "DELETE", &first, Some(&revoker), &json!({}))
        .await
        .assert_error(403, "forbidden");
    for vid in &theirs {
        let path = format!("{versions}/{vid}");
        send_json(&node, "DELETE", &path, Some(&server), &json!({}))
            .await
            .assert_status(204);
    }
    // They are gone (what they kept is folded into the versions after them).
    let list = get(&node, &versions, Some(&server)).await;
    let left = list.body()["versions"].as_array().map(|v| {
        v.iter()
            .filter(|v| theirs.contains(&v["id"].as_u64().unwrap_or(0)) && v["kind"] == "named")
            .count()
    });
    assert_eq!(left, Some(0), "{}", list.text);
    guest.close().await;
    figure(json!({
        "case": "a guest names versions of one of the app's files",
        "limit": 262_144, "guest_named": named, "guest_answers": answers,
        "app": "named, patched and deleted the guest's versions with its server key",
    }));
}

/// A guest with the edit link who rewrites text in place (the same size each time) grows
/// nothing in the document, but every patch stays in the log until the next snapshot and
/// each automatic version keeps the rewrite: past the share that went on without end (the
/// sixteenth review: 9.1 MB kept in a minute for one of the app's files, whose guests' share
/// was 128 KiB; on an account's file 2.7 MB past a 256 KiB limit, and then the owner could no
/// longer grow the document nor name a version). Past their share a guest's patch now lands
/// only when it frees what it logs, and an automatic version of guests' edits fits their share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_rewriting_in_place_stop_at_their_share() {
    let admin = unique_email("admin");
    let node = node(&[
        ("ATRIUM_STORAGE_PER_ACCOUNT", "256K"),
        ("ATRIUM_CHECKPOINT_MS", "200"),
        ("ATRIUM_ADMINS", admin.as_str()),
    ])
    .await;
    // An account's public file: the owner goes on after the guest.
    let f = shared_file(&node, "edit").await;
    let on_account = rewrite_in_place(&node, &f.id, &f.edit_key).await;
    let (mut owner, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;
    owner
        .patch_acked(1, vec![put("mine", json!({"text": noise(20_000)}))])
        .await;
    owner.close().await;
    name_as(&node, &f.id, &f.owner, "the owner's")
        .await
        .assert_status(201);
    // One of the app's own files: its automatic versions stop with the guest.
    let (session, _) = signup(&node, &admin).await;
    let (server, _) = make_key(&node, &session, &["server"]).await;
    let id = format!("board_{}", &secret()[..8]);
    let made = app_file(&node, &server, id.clone()).await;
    made.assert_status(201);
    let edit_key = made.body()["edit_key"].as_str().expect("key").to_owned();
    let on_app_file = rewrite_in_place(&node, &id, &edit_key).await;
    let list = get(&node, &format!("/api/files/{id}/versions"), Some(&server)).await;
    list.assert_status(200);
    let automatic = list.body()["versions"]
        .as_array()
        .map_or(0, |v| v.iter().filter(|v| v["kind"] == "auto").count());
    for (what, (kept, refused)) in [("account", on_account), ("app", on_app_file)] {
        assert!(
            kept <= 8 && refused >= 30,
            "on the {what}'s file a guest's 40 rewrites of 30 KB: {kept} kept, {refused} refused"
        );
    }
    assert!(
        automatic <= on_app_file.0 + 1,
        "{automatic} automatic versions of {} kept rewrites",
        on_app_file.0
    );
    figure(json!({
        "case": "a guest rewrites 30 KB of text in place, 40 times",
        "limit": 262_144, "account_file_kept_refused": on_account,
        "app_file_kept_refused": on_app_file, "app_file_automatic_versions": automatic,
        "owner": "grew the document and named a version after",
    }));
}

/// A guest with `key` rewrites a 30 KB text in place 40 times, a checkpoint's time apart:
/// how many landed and how many were refused at the link's share.
async fn rewrite_in_place(node: &Node, file: &str, key: &str) -> (usize, usize) {
    let (mut guest, _) = Client::join(node, file, &Hello::key(key)).await;
    let (mut kept, mut refused) = (0, 0);
    for round in 0..40u64 {
        let text = noise(30_000)[..30_000].to_owned();
        guest
            .send_patch(round + 1, vec![put("blob", json!({ "text": text }))])
            .await;
        loop {
            let m = guest.recv_json().await;
            match m["type"].as_str() {
                Some("ack") => kept += 1,
                Some("reject") => {
                    assert_eq!(m["code"], "too-large", "{m}");
                    assert!(
                        m["message"].as_str().is_some_and(|t| t.contains("share")),
                        "{m}"
                    );
                    refused += 1;
                }
                _ => continue,
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    guest.close().await;
    (kept, refused)
}

/// One of the app's own files, `id`, with an edit link, made with the `server` key.
async fn app_file(node: &Node, server: &str, id: String) -> Resp {
    let body = json!({"id": id, "link": "edit"});
    send_json(node, "POST", "/api/server/files", Some(server), &body).await
}

/// Notes a guest's naming in `answers`: true while it was kept, else checks it was refused
/// at the link's share of storage.
fn named_within_the_share(r: &Resp, answers: &mut Vec<u16>) -> bool {
    answers.push(r.status);
    if r.status == 201 {
        return true;
    }
    r.assert_error(403, "storage-full");
    assert!(r.text.contains("share"), "{}", r.text);
    false
}

async fn name_as(node: &Node, id: &str, token: &str, title: &str) -> Resp {
    let body = json!({"title": title});
    send_json(
        node,
        "POST",
        &format!("/api/files/{id}/versions"),
        Some(token),
        &body,
    )
    .await
}
