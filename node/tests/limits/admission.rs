//! Admission control: a storm of joins waits its turn.

use super::*;

/// What a bare joiner got first: its welcome, or a close (code, reason).
async fn first_answer(url: &str, key: &str) -> Result<(), (u16, String)> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("upgrade");
    let hello = Hello::key(key).to_json();
    ws.send(Message::text(hello.to_string()))
        .await
        .expect("hello");
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                let m: Value = serde_json::from_str(t.as_str()).expect("JSON");
                assert_eq!(
                    m["type"], "welcome",
                    "the first message must be the welcome: {m}"
                );
                return Ok(());
            }
            Ok(Some(Ok(Message::Close(Some(f))))) => {
                return Err((u16::from(f.code), f.reason.to_string()))
            }
            Ok(Some(Ok(_))) => {}
            other => panic!("no welcome and no close: {other:?}"),
        }
    }
}

/// A storm of joins is taken at the pace the node carries: with one join worked on at
/// a time and no time to wait, the joiners of a file whose room must first load a large
/// document are told to come back (1013, with a `retry-ms` hint between 1 and 3 s, drawn
/// apart), the one that had the turn is welcomed, and `atrium_joins_total` counts them
/// admitted and deferred; a bad key is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_joins_waits_its_turn_and_the_rest_are_told_when_to_come_back() {
    let node = Node::start(&[
        ("ATRIUM_JOINS_IN_FLIGHT", "1"),
        ("ATRIUM_JOIN_WAIT_MS", "1"),
        ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
        ("ATRIUM_ARGON2_ITERATIONS", "1"),
    ])
    .await;
    let owner = new_account(&node, "owner").await;
    let doc: serde_json::Map<String, Value> = (0..20_000)
        .map(|k| (format!("d{k}"), json!({"x": k, "name": "a shape to load"})))
        .collect();
    let file = create_file(&node, &owner, "Big", Some(Value::Object(doc))).await;
    let (id, key) = (s(&file["id"]).to_string(), s(&file["edit_key"]).to_string());
    set_link(&node, &owner, &id, "edit").await;

    let url = node.ws_url(&id);
    let storm: Vec<_> = (0..20)
        .map(|_| {
            let (url, key) = (url.clone(), key.clone());
            tokio::spawn(async move { first_answer(&url, &key).await })
        })
        .collect();
    let mut welcomed = 0;
    let mut hints = Vec::new();
    for joiner in storm {
        match joiner.await.expect("joiner") {
            Ok(()) => welcomed += 1,
            Err((1013, reason)) => {
                let hint: u64 = reason
                    .rsplit_once("retry-ms=")
                    .unwrap_or_else(|| panic!("1013 without a retry hint: {reason:?}"))
                    .1
                    .parse()
                    .expect("a number of ms");
                hints.push(hint);
            }
            Err(other) => panic!("a joiner was closed with {other:?}"),
        }
    }
    assert!(welcomed >= 1, "nobody had the turn");
    assert!(hints.len() >= 5, "{} deferred of 20", hints.len());
    assert!(hints.iter().all(|h| (1000..=3000).contains(h)), "{hints:?}");
    let spread = hints.iter().max().unwrap() - hints.iter().min().unwrap();
    assert!(spread > 0, "the hints are not jittered: {hints:?}");

    // A bad key is refused, not deferred.
    assert_eq!(
        first_answer(&url, "not-a-key").await.map_err(|e| e.0),
        Err(4001)
    );
    let text = metrics_text(&node).await;
    let joins = |outcome| metric(&text, "atrium_joins_total", &[("outcome", outcome)]);
    assert_eq!(joins("admitted"), welcomed as f64);
    assert_eq!(joins("deferred"), hints.len() as f64);
    assert_eq!(joins("refused"), 1.0);
}
