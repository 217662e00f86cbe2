//! Resume: a reconnect gets exactly the missed patches, or the doc when they are gone.

use super::*;

/// Sends `n` patches as `c` (op ids from `first_id`), waiting for each ack.
async fn make_patches(c: &mut Client, first_id: u64, n: u64, tag: &str) -> Vec<(u64, Value)> {
    let mut out = Vec::new();
    for i in 0..n {
        let ops = vec![put(&format!("{tag}{i}"), json!({"i": i}))];
        let v = c.patch_acked(first_id + i, ops.clone()).await;
        out.push((v, json!(ops)));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_gets_exactly_the_missed_patches() {
    let (node, f) = node_with_file(&[]).await;
    let (owner, id) = (f.owner.clone(), f.id.clone());

    let hello_a = Hello::token(&owner);
    let (mut a, wa) = Client::join(&node, &id, &hello_a).await;
    let (mut b, _) = Client::join(&node, &id, &Hello::key(&f.edit_key)).await;
    let you_b = {
        // B's person id, as A sees it in relays.
        let mine = make_patches(&mut a, 1, 2, "a").await;
        assert_eq!(mine.iter().map(|p| p.0).collect::<Vec<_>>(), vec![1, 2]);
        b.collect_patches(2).await;
        b.patch_acked(100, vec![put("probe", json!({}))]).await;
        let m = a.recv_json().await;
        assert_eq!(m["v"], 3);
        s(&m["by"]).to_string()
    };
    a.close().await;

    let missed = make_patches(&mut b, 101, 3, "b").await;
    assert_eq!(
        missed.iter().map(|p| p.0).collect::<Vec<_>>(),
        vec![4, 5, 6]
    );

    // since 3: exactly 4, 5, 6, as patches by B, in order.
    let (mut a, w) = Client::join(&node, &id, &hello_a.clone().since(Some(3))).await;
    assert_eq!(w["you"], wa["you"], "you must be stable across a reconnect");
    assert_eq!(w["version"], 6, "{w}");
    assert!(
        w.get("doc").is_none(),
        "resume must come instead of doc: {w}"
    );
    let resume = w["resume"].as_array().expect("resume list");
    assert_eq!(resume.len(), 3, "{w}");
    for (m, (v, ops)) in resume.iter().zip(&missed) {
        assert_eq!(m["type"], "patch", "{m}");
        assert_eq!(m["v"], json!(v), "{m}");
        assert_eq!(&m["ops"], ops, "{m}");
        assert_eq!(m["by"], json!(you_b), "{m}");
    }
    // After the resume, live traffic continues at version 7.
    b.patch_acked(104, vec![delete("b0")]).await;
    let m = a.recv_json().await;
    assert_eq!(
        (m["type"].clone(), m["v"].clone()),
        (json!("patch"), json!(7))
    );
    a.close().await;

    // since 1: its own version 2 comes back as an ack, the rest as patches.
    let (a, w) = Client::join(&node, &id, &hello_a.clone().since(Some(1))).await;
    assert!(w.get("doc").is_none(), "{w}");
    let resume = w["resume"].as_array().expect("resume list");
    let shape: Vec<(String, u64)> = resume
        .iter()
        .map(|m| (s(&m["type"]).to_string(), m["v"].as_u64().expect("v")))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("ack".into(), 2),
            ("patch".into(), 3),
            ("patch".into(), 4),
            ("patch".into(), 5),
            ("patch".into(), 6),
            ("patch".into(), 7)
        ],
        "{w}"
    );
    assert_eq!(resume[0]["id"], 2, "own patch is acked with its op id: {w}");
    a.close().await;

    // since equal to the version: an empty resume.
    let (a, w) = Client::join(&node, &id, &hello_a.clone().since(Some(7))).await;
    assert_eq!(w["version"], 7);
    assert_eq!(w["resume"], json!([]), "{w}");
    assert!(w.get("doc").is_none(), "{w}");
    a.close().await;

    // since above the version, or null: the whole doc.
    for since in [Some(99), None] {
        let (a, w) = Client::join(&node, &id, &hello_a.clone().since(since)).await;
        assert!(w.get("resume").is_none(), "since {since:?}: {w}");
        assert_eq!(w["version"], 7);
        let (_, doc) = get_doc(&node, &owner, &id).await;
        assert_eq!(w["doc"], doc, "since {since:?}");
        a.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_since_beyond_the_ring_gets_the_doc() {
    let node = Node::start(&[("ATRIUM_ROOM_OPS", "5")]).await;
    let (owner, id) = owned_file(&node).await;
    let (mut a, _) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let mut model = Map::new();
    for i in 1..=20u64 {
        // One op per patch, so the ring holds 5 patches whether it counts
        // patches or ops.
        let ops = if i % 2 == 0 {
            vec![set("n1", json!({"last": i}))]
        } else {
            vec![put(&format!("n{i}"), json!({"i": i}))]
        };
        apply_ops(&mut model, &ops);
        assert_eq!(a.patch_acked(i, ops).await, i);
    }

    let (b, w) = Client::join(&node, &id, &Hello::token(&owner).since(Some(2))).await;
    assert!(
        w.get("resume").is_none(),
        "ring holds 5, since 2 is too old: {w}"
    );
    assert_eq!(w["version"], 20);
    assert_eq!(w["doc"], Value::Object(model.clone()));
    b.close().await;

    let (b, w) = Client::join(&node, &id, &Hello::token(&owner).since(Some(21))).await;
    assert!(w.get("resume").is_none(), "since above the version: {w}");
    assert_eq!(w["doc"], Value::Object(model.clone()));
    b.close().await;

    // Within the ring, resume still works.
    let (_b, w) = Client::join(&node, &id, &Hello::token(&owner).since(Some(17))).await;
    assert!(w.get("doc").is_none(), "{w}");
    let vs: Vec<u64> = w["resume"]
        .as_array()
        .expect("resume")
        .iter()
        .map(|m| m["v"].as_u64().unwrap())
        .collect();
    assert_eq!(vs, vec![18, 19, 20], "{w}");
}
