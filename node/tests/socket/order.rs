//! Two people editing at once see one gapless order, and the doc ends as a model of it.

use super::*;

fn base_doc() -> Value {
    json!({
        "page1": {"type": "page", "name": "Page 1"},
        "shared": {"page": "page1", "last": "init", "x": 0}
    })
}

/// One side of the two-person test: sends its patches without waiting, then
/// reads until it has seen every version up to `total`. Returns, per version,
/// (who made it: "self" or a person id, the ops, the echoed `t`).
async fn run_side(
    mut c: Client,
    tag: &'static str,
    count: u64,
    total: u64,
) -> (Client, BTreeMap<u64, (String, Value, Value)>) {
    let mut sent: HashMap<u64, (Value, Value)> = HashMap::new();
    for i in 1..=count {
        let ops = vec![
            put(
                &format!("{tag}{i}"),
                json!({"page": "page1", "n": i, "by": tag}),
            ),
            set("shared", json!({"last": format!("{tag}{i}"), "x": i})),
        ];
        let t = match i % 3 {
            0 => json!(1234567),
            1 => json!(12.5),
            _ => Value::Null,
        };
        let mut msg = patch_msg(i, ops.clone());
        if !t.is_null() {
            msg["t"] = t.clone();
        }
        c.send_json(&msg).await;
        sent.insert(i, (json!(ops), t));
    }

    let mut seen: BTreeMap<u64, (String, Value, Value)> = BTreeMap::new();
    let mut last_v = 0;
    let mut last_ack_id = 0;
    while last_v < total {
        let m = c.recv_json().await;
        let v = m["v"]
            .as_u64()
            .unwrap_or_else(|| panic!("{tag}: message without a numeric v: {m}"));
        assert_eq!(
            v,
            last_v + 1,
            "{tag}: versions must arrive gapless and in order (got {m})"
        );
        last_v = v;
        match s(&m["type"]) {
            "ack" => {
                let id = m["id"].as_u64().expect("ack id");
                assert!(
                    id > last_ack_id,
                    "{tag}: acks must come once each, in op id order: {m}"
                );
                last_ack_id = id;
                let (ops, t) = sent.get(&id).expect("ack for an op we sent").clone();
                if t.is_null() {
                    assert!(
                        m.get("t").is_none_or(Value::is_null),
                        "{tag}: ack carries a t the patch lacked: {m}"
                    );
                } else {
                    assert_eq!(m["t"], t, "{tag}: ack must echo t: {m}");
                }
                seen.insert(v, ("self".to_string(), ops, t));
            }
            "patch" => {
                let by = s(&m["by"]).to_string();
                let t = m.get("t").cloned().unwrap_or(Value::Null);
                seen.insert(v, (by, m["ops"].clone(), t));
            }
            other => panic!("{tag}: unexpected message type {other}: {m}"),
        }
    }
    assert_eq!(last_ack_id, count, "{tag}: every patch must be acked");
    (c, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_see_the_same_gapless_order() {
    let node = Node::start(&[]).await;
    let owner = new_account(&node, "owner").await;
    let file = create_file(&node, &owner, "Board", Some(base_doc())).await;
    let id = s(&file["id"]).to_string();
    set_link(&node, &owner, &id, "edit").await;

    let (a, wa) = Client::join(&node, &id, &Hello::token(&owner)).await;
    let (b, wb) = Client::join(&node, &id, &Hello::key(s(&file["edit_key"]))).await;
    assert_eq!(wa["role"], "editor", "owner welcome: {wa}");
    assert_eq!(wb["role"], "editor", "edit key with link edit: {wb}");
    assert_eq!(wa["version"], 0);
    assert_eq!(wb["version"], 0);
    assert_eq!(wa["doc"], base_doc(), "welcome doc: {wa}");
    assert!(
        wa.get("resume").is_none(),
        "doc and resume both present: {wa}"
    );
    let (you_a, you_b) = (you(&wa), you(&wb));
    assert_id(&wa["you"]);
    assert_id(&wb["you"]);
    assert_ne!(you_a, you_b);
    // The people list includes the joiner itself.
    let people_b: Vec<&str> = wb["people"]
        .as_array()
        .expect("people")
        .iter()
        .map(|p| s(&p["id"]))
        .collect();
    assert!(people_b.contains(&you_b.as_str()), "{wb}");
    assert!(people_b.contains(&you_a.as_str()), "{wb}");

    const EACH: u64 = 15;
    const TOTAL: u64 = 2 * EACH;
    let ha = tokio::spawn(run_side(a, "a", EACH, TOTAL));
    let hb = tokio::spawn(run_side(b, "b", EACH, TOTAL));
    let (_a, seen_a) = ha.await.expect("side a");
    let (_b, seen_b) = hb.await.expect("side b");

    // Same ops in the same order on both sides, authorship consistent.
    let mut model: Map<String, Value> = base_doc().as_object().unwrap().clone();
    for v in 1..=TOTAL {
        let (by_a, ops_a, t_a) = &seen_a[&v];
        let (by_b, ops_b, t_b) = &seen_b[&v];
        assert_eq!(ops_a, ops_b, "version {v} has different ops on each side");
        assert_eq!(t_a, t_b, "version {v}: relayed t differs from the sent one");
        match (by_a.as_str(), by_b.as_str()) {
            ("self", by) => assert_eq!(by, you_a, "version {v} relayed with wrong by"),
            (by, "self") => assert_eq!(by, you_b, "version {v} relayed with wrong by"),
            other => panic!("version {v}: neither side made it: {other:?}"),
        }
        apply_ops(&mut model, ops_a.as_array().unwrap());
    }

    let (version, doc) = get_doc(&node, &owner, &id).await;
    assert_eq!(version, TOTAL);
    assert_eq!(doc, Value::Object(model));
}
