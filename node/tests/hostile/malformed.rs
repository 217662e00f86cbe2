//! Malformed JSON, wrong types, unknown types.

use super::*;

/// Texts that must each get `reject` / `invalid` with the given id, and
/// change nothing.
fn garbage() -> Vec<(String, Value)> {
    let n = json!(7);
    let null = Value::Null;
    let mut v: Vec<(String, Value)> = [
        // Not JSON, or not an object.
        ("{not json", &null),
        ("", &null),
        ("{\"type\":\"patch\",", &null),
        ("[1,2,3]", &null),
        ("null", &null),
        ("\"patch\"", &null),
        ("42", &null),
        // Type missing, of the wrong type, or unknown.
        ("{}", &null),
        ("{\"type\":7}", &null),
        ("{\"type\":null}", &null),
        ("{\"type\":[\"patch\"]}", &null),
        ("{\"type\":\"dance\"}", &null),
        ("{\"type\":\"PATCH\",\"id\":7,\"ops\":[]}", &null),
        ("{\"type\":\"welcome\"}", &null),
        // Patches whose id cannot be read.
        ("{\"type\":\"patch\",\"id\":\"7\",\"ops\":[]}", &null),
        ("{\"type\":\"patch\",\"id\":-7,\"ops\":[]}", &null),
        ("{\"type\":\"patch\",\"id\":0,\"ops\":[]}", &null),
        ("{\"type\":\"patch\",\"id\":7.5,\"ops\":[]}", &null),
        (
            "{\"type\":\"patch\",\"id\":18446744073709551616,\"ops\":[]}",
            &null,
        ),
        ("{\"type\":\"patch\",\"ops\":[]}", &null),
        // Patches with a readable id and a bad body.
        ("{\"type\":\"patch\",\"id\":7}", &n),
        ("{\"type\":\"patch\",\"id\":7,\"ops\":{}}", &n),
        ("{\"type\":\"patch\",\"id\":7,\"ops\":\"put\"}", &n),
        ("{\"type\":\"patch\",\"id\":7,\"ops\":[1]}", &n),
        (
            "{\"type\":\"patch\",\"id\":7,\"ops\":[{\"op\":\"put\",\"id\":\"a\",\"props\":[]}]}",
            &n,
        ),
        (
            "{\"type\":\"patch\",\"id\":7,\"ops\":[{\"op\":\"put\",\"id\":7,\"props\":{}}]}",
            &n,
        ),
        (
            "{\"type\":\"patch\",\"id\":7,\"ops\":[{\"op\":\"explode\",\"id\":\"a\"}]}",
            &n,
        ),
        (
            "{\"type\":\"patch\",\"id\":7,\"ops\":[{\"op\":\"delete\",\"id\":\"a\",\"x\":1}]}",
            &n,
        ),
        (
            "{\"type\":\"patch\",\"id\":7,\"ops\":[{\"op\":\"set\",\"id\":\"a\"}]}",
            &n,
        ),
        ("{\"type\":\"patch\",\"id\":7,\"ops\":[],\"t\":\"12\"}", &n),
        ("{\"type\":\"patch\",\"id\":7,\"ops\":[],\"t\":1e999}", &n),
        ("{\"type\":\"patch\",\"id\":7,\"ops\":[],\"t\":[1]}", &n),
        // Presence of the wrong shapes.
        ("{\"type\":\"presence\",\"cursor\":\"here\"}", &null),
        ("{\"type\":\"presence\",\"cursor\":[1]}", &null),
        ("{\"type\":\"presence\",\"cursor\":[1,\"2\"]}", &null),
        ("{\"type\":\"presence\",\"camera\":[1,2]}", &null),
        ("{\"type\":\"presence\",\"sel\":\"a\"}", &null),
        ("{\"type\":\"presence\",\"sel\":[1]}", &null),
        ("{\"type\":\"presence\",\"page\":5}", &null),
        ("{\"type\":\"presence\",\"t\":\"now\"}", &null),
        // A second hello on a socket.
        ("{\"type\":\"hello\",\"client\":\"again\"}", &null),
    ]
    .into_iter()
    .map(|(t, id)| (t.to_string(), id.clone()))
    .collect();
    let sel: Vec<String> = (0..101).map(|i| format!("s{i}")).collect();
    v.push((
        json!({"type": "presence", "sel": sel}).to_string(),
        Value::Null,
    ));
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_wrong_types_and_unknown_types_are_rejected() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let rss0 = rss_kib(r.node.pid());

    // Four attackers with the edit key, each sending the whole list in a loop
    // and checking every answer, for two seconds.
    let done = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let mut attackers = Vec::new();
    for _ in 0..4 {
        let (port, file, key) = (r.node.port, r.id.clone(), r.edit_key.clone());
        let (done, sent) = (done.clone(), sent.clone());
        attackers.push(tokio::spawn(async move {
            let mut raw = Raw::join(port, &file, &Hello::key(&key), "").await;
            let until = Instant::now() + Duration::from_secs(2);
            while Instant::now() < until {
                for (text, id) in garbage() {
                    raw.text(&text).await;
                    let m = raw.reject().await;
                    assert_eq!(m["code"], "invalid", "for {text:?}: {m}");
                    assert_eq!(m["id"], id, "reject id for {text:?}: {m}");
                    assert!(m["message"].is_string(), "{m}");
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            }
            // Still usable: a good patch is acked.
            raw.text(&patch_msg(1, vec![put("attacker", json!({"ok": true}))]).to_string())
                .await;
            raw.expect_ack("a good patch after the garbage").await;
            done.store(true, Ordering::SeqCst);
        }));
    }
    let during = probe.sample_while(&done, 30, 400).await;
    for a in attackers {
        a.await.expect("attacker");
    }
    let rss1 = rss_kib(r.node.pid());
    // The attackers' one good patch each (on the same node) is all that changed.
    assert_untouched(&r, &probe, 4, json!({"attacker": {"ok": true}})).await;
    let kinds = garbage().len();
    report(
        "malformed JSON, wrong types, unknown types",
        &base,
        &during,
        json!({
            "kinds": kinds,
            "messages": sent.load(Ordering::Relaxed),
            "answer": "reject invalid (id null, or the patch id when readable)",
            "rss_before_kib": rss0, "rss_after_kib": rss1,
        }),
    );
}
