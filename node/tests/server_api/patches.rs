//! Server patches: through the room like a socket's, durable before the answer, relayed
//! under the service person, converging with twenty editors; retries get the first answer.

use std::collections::BTreeMap;

use super::*;

/// What one editor saw: every version's ops, its own acked patches' node ids by version,
/// and the service persons it saw patches from.
struct Seen {
    ops: BTreeMap<u64, Vec<Value>>,
    acked: Vec<(u64, String)>,
    start: u64,
    doc: Map<String, Value>,
    by_service: usize,
}

fn take(m: &Value, sent: &BTreeMap<u64, Vec<Value>>, seen: &mut Seen) -> Option<u64> {
    match m["type"].as_str() {
        Some("patch") => {
            let v = m["v"].as_u64().expect("patch v");
            if s(&m["by"]).starts_with("svc-") {
                seen.by_service += 1;
            }
            seen.ops
                .insert(v, m["ops"].as_array().expect("ops").clone());
            None
        }
        Some("ack") => {
            let (id, v) = (m["id"].as_u64().unwrap(), m["v"].as_u64().unwrap());
            let ops = sent[&id].clone();
            seen.acked.push((v, s(&ops[0]["id"]).to_owned()));
            seen.ops.insert(v, ops);
            Some(id)
        }
        Some("version" | "role") => None,
        _ => panic!("unexpected message {m}"),
    }
}

async fn edit(mut c: Client, welcome: Value, tag: String, count: u64) -> (Client, Seen) {
    let mut seen = Seen {
        ops: BTreeMap::new(),
        acked: Vec::new(),
        start: welcome["version"].as_u64().unwrap(),
        doc: welcome["doc"].as_object().unwrap().clone(),
        by_service: 0,
    };
    let mut sent = BTreeMap::new();
    for k in 1..=count {
        let ops = vec![put(&format!("{tag}-{k}"), json!({"k": k, "by": tag}))];
        sent.insert(k, ops.clone());
        c.send_patch(k, ops).await;
        loop {
            let m = c.recv_json().await;
            if take(&m, &sent, &mut seen) == Some(k) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (c, seen)
}

async fn converge(c: &mut Client, seen: &mut Seen, upto: u64, last: &Value) {
    let sent = BTreeMap::new();
    while seen.ops.range(seen.start + 1..=upto).count() < (upto - seen.start) as usize {
        let m = c.recv_json().await;
        take(&m, &sent, seen);
    }
    for (_, ops) in seen.ops.range(seen.start + 1..=upto) {
        apply_ops(&mut seen.doc, ops);
    }
    assert_eq!(
        &Value::Object(seen.doc.clone()),
        last,
        "a client did not converge"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_patches_while_twenty_people_edit() {
    twenty_edit_with_server_patches(&[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_patches_while_twenty_people_edit_on_postgres() {
    let db = TestDatabase::create().await;
    twenty_edit_with_server_patches(&[("ATRIUM_DATABASE_URL", db.url.as_str())]).await;
}

async fn twenty_edit_with_server_patches(envs: &[(&str, &str)]) {
    let (node, _, key, key_id) = node_with_key(envs, &["server"]).await;
    let file = shared_file(&node, "edit").await;
    let mut editors = Vec::new();
    for i in 0..20 {
        let (c, welcome) = Client::join(&node, &file.id, &file.by_edit_key()).await;
        editors.push(tokio::spawn(edit(c, welcome, format!("e{i}"), 30)));
    }
    let mut server_vs = Vec::new();
    for k in 0..10 {
        tokio::time::sleep(Duration::from_millis(30)).await;
        let ops = vec![
            put(&format!("srv-{k}"), json!({"from": "server", "k": k})),
            set("e0-1", json!({"touched": k})),
        ];
        let r = server_patch(&node, &key, &file.id, &format!("import-{k}"), ops).await;
        r.assert_status(200);
        assert_eq!(r.body()["by"], json!(format!("svc-{key_id}")));
        assert_eq!(r.body()["replayed"], json!(false));
        server_vs.push(r.body()["v"].as_u64().unwrap());
    }
    let mut done = Vec::new();
    for e in editors {
        done.push(e.await.expect("an editor"));
    }
    let (last_v, last) = get_doc(&node, &file.owner, &file.id).await;
    let mut lost = 0;
    for (c, seen) in done.iter_mut() {
        converge(c, seen, last_v, &last).await;
        lost += seen
            .acked
            .iter()
            .filter(|(_, id)| last.get(id).is_none())
            .count();
        // Every server patch after its welcome came to it as a patch from the service.
        let expected = server_vs.iter().filter(|v| **v > seen.start).count();
        assert_eq!(seen.by_service, expected, "server patches relayed");
    }
    assert_eq!(lost, 0, "acked patches were lost");
    assert_eq!(last_v, 20 * 30 + 10, "every patch took one version");
    for k in 0..10 {
        assert_eq!(last[format!("srv-{k}")]["from"], "server");
    }
    // Versions are distinct and increasing in the order the server sent them.
    assert!(server_vs.windows(2).all(|w| w[0] < w[1]), "{server_vs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_gets_the_first_answer_even_after_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let admin = unique_email("admin");
    let envs = [("ATRIUM_ADMINS", admin.as_str())];
    let mut node = Node::start_in(data.path(), &envs).await;
    let (session, _) = signup(&node, &admin).await;
    let (key, _) = make_key(&node, &session, &["server"]).await;
    let file = shared_file(&node, "edit").await;
    // No room is open: the patch opens one.
    let ops = vec![put("a", json!({"n": 1}))];
    let first = server_patch(&node, &key, &file.id, "op-1", ops.clone()).await;
    first.assert_status(200);
    let v = first.body()["v"].as_u64().unwrap();
    assert_eq!(v, 1);
    // The same op id again, even with other ops: the first answer, nothing applied.
    let again = server_patch(&node, &key, &file.id, "op-1", vec![put("b", json!({}))]).await;
    again.assert_status(200);
    assert_eq!(again.body()["v"], json!(v));
    assert_eq!(again.body()["replayed"], json!(true));
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .map(|h| h.to_str().unwrap()),
        Some("true")
    );
    // Concurrent duplicates of a new op id: one version between them.
    let mut both = Vec::new();
    for _ in 0..4 {
        let (node_port, key, id) = (node.port, key.clone(), file.id.clone());
        both.push(tokio::spawn(async move {
            http_at(
                node_port,
                "POST",
                &format!("/api/files/{id}/patches"),
                &[
                    ("authorization", &bearer(&key)),
                    ("idempotency-key", "op-2"),
                ],
                Some(
                    json!({"ops": [put("c", json!({"n": 3}))]})
                        .to_string()
                        .into_bytes(),
                ),
            )
            .await
        }));
    }
    let mut vs = Vec::new();
    for b in both {
        let r = b.await.unwrap();
        r.assert_status(200);
        vs.push(r.body()["v"].as_u64().unwrap());
    }
    assert!(vs.iter().all(|x| *x == 2), "{vs:?}");
    let (version, doc) = get_doc(&node, &file.owner, &file.id).await;
    assert_eq!(version, 2);
    assert!(doc.get("b").is_none());

    // kill -9 and a restart on the same store: the op ids are remembered durably.
    node.kill9();
    let node = Node::start_in(data.path(), &envs).await;
    let after = server_patch(&node, &key, &file.id, "op-1", ops).await;
    after.assert_status(200);
    assert_eq!(after.body()["v"], json!(1));
    assert_eq!(after.body()["replayed"], json!(true));
    let (version, _) = get_doc(&node, &file.owner, &file.id).await;
    assert_eq!(version, 2, "a retry after the restart changed nothing");
    let fresh = server_patch(&node, &key, &file.id, "op-3", vec![delete("a")]).await;
    assert_eq!(fresh.body()["v"], json!(3));
    // Recorded in the history like any edit, under the service's name.
    let r = send_json(
        &node,
        "POST",
        &format!("/api/files/{}/versions", file.id),
        Some(&file.owner),
        &json!({"title": "after the import"}),
    )
    .await;
    r.assert_status(201);
    assert_eq!(r.body()["editors"], json!(["Import job"]), "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_change_nothing() {
    let (node, session, key, _) = node_with_key(
        &[
            ("ATRIUM_MAX_PATCH_OPS", "5"),
            ("ATRIUM_MAX_MESSAGE_BYTES", "4096"),
        ],
        &["server"],
    )
    .await;
    let (revoke_only, _) = make_key(&node, &session, &["revoke"]).await;
    let file = shared_file(&node, "edit").await;
    let (mut watcher, _) = Client::join(&node, &file.id, &file.by_edit_key()).await;
    let path = format!("/api/files/{}/patches", file.id);
    let good = json!({"op_id": "x1", "ops": [put("a", json!({}))]});
    let post = |token: Option<String>, body: Value, path: String| {
        let node = &node;
        async move { send_json(node, "POST", &path, token.as_deref(), &body).await }
    };
    // Who may: no token, a session token, a key without `server`, a made-up key.
    post(None, good.clone(), path.clone())
        .await
        .assert_error(401, "unauthorized");
    post(Some(file.owner.clone()), good.clone(), path.clone())
        .await
        .assert_error(401, "unauthorized");
    post(Some(revoke_only), good.clone(), path.clone())
        .await
        .assert_error(403, "forbidden");
    post(
        Some(format!("atk_{}", secret())),
        good.clone(),
        path.clone(),
    )
    .await
    .assert_error(401, "unauthorized");
    // What: an unknown op, no op id, a bad op id, not JSON, too many ops, too big.
    let k = Some(key.clone());
    for body in [
        json!({"op_id": "x2", "ops": [{"op": "explode", "id": "a"}]}),
        json!({"op_id": "x2", "ops": [{"op": "put", "id": "bad id", "props": {}}]}),
        json!({"ops": [put("a", json!({}))]}),
        json!({"op_id": "has space", "ops": [put("a", json!({}))]}),
        json!({"op_id": "x2", "ops": "nope"}),
    ] {
        post(k.clone(), body, path.clone())
            .await
            .assert_error(400, "bad-request");
    }
    let six: Vec<Value> = (0..6).map(|i| put(&format!("n{i}"), json!({}))).collect();
    post(k.clone(), json!({"op_id": "x3", "ops": six}), path.clone())
        .await
        .assert_error(413, "too-large");
    let big = json!({"op_id": "x4", "ops": [put("a", json!({"s": "x".repeat(5000)}))]});
    post(k.clone(), big, path.clone())
        .await
        .assert_error(413, "too-large");
    let raw = http(
        &node,
        "POST",
        &path,
        &[("authorization", &bearer(&key))],
        Some(b"{not json".to_vec()),
    )
    .await;
    raw.assert_error(400, "bad-request");
    // Where: a bad file id, a file that does not exist.
    post(
        k.clone(),
        good.clone(),
        "/api/files/bad%20id/patches".into(),
    )
    .await
    .assert_error(400, "bad-request");
    post(
        k.clone(),
        good.clone(),
        "/api/files/nosuchfile/patches".into(),
    )
    .await
    .assert_error(404, "not-found");
    // Nothing changed, and nobody was told anything.
    let (version, doc) = get_doc(&node, &file.owner, &file.id).await;
    assert_eq!((version, doc), (0, json!({})));
    watcher.expect_quiet(Duration::from_millis(300)).await;
    // The refused op ids are free: the good request still applies.
    let r = server_patch(&node, &key, &file.id, "x2", vec![put("ok", json!({}))]).await;
    r.assert_status(200);
    assert_eq!(r.body()["v"], json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_over_its_rate_gets_429() {
    let (node, _, key, _) =
        node_with_key(&[("ATRIUM_SERVER_API_PER_SECOND", "3")], &["server"]).await;
    let file = shared_file(&node, "edit").await;
    let mut codes = Vec::new();
    for i in 0..10 {
        let r = server_patch(
            &node,
            &key,
            &file.id,
            &format!("r{i}"),
            vec![put("a", json!({"i": i}))],
        )
        .await;
        codes.push(r.status);
    }
    assert!(codes.contains(&429), "{codes:?}");
    let applied = codes.iter().filter(|c| **c == 200).count() as u64;
    let (version, _) = get_doc(&node, &file.owner, &file.id).await;
    assert_eq!(version, applied, "refused requests applied nothing");
}
