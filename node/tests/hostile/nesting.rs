//! Deep nesting.

use super::*;

fn nested(levels: usize) -> String {
    format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_nesting_is_refused_without_harm() {
    let (_serial, mut r, mut probe, base) = case(&[]).await;
    let deep = nested(10_000);
    let cases: Vec<(String, Value)> = vec![
        (
            format!(
                "{{\"type\":\"patch\",\"id\":9,\"ops\":[{{\"op\":\"put\",\"id\":\"a\",\"props\":{{\"x\":{deep}}}}}]}}"
            ),
            json!(9),
        ),
        (
            format!("{{\"type\":\"patch\",\"id\":9,\"ops\":{deep}}}"),
            json!(9),
        ),
        (deep.clone(), Value::Null),
        (
            format!("{{\"type\":\"presence\",\"cursor\":{deep}}}"),
            Value::Null,
        ),
        (
            format!("{{\"type\":\"presence\",\"page\":{}}}", {
                let objs = "{\"a\":".repeat(10_000);
                format!("{objs}1{}", "}".repeat(10_000))
            }),
            Value::Null,
        ),
        // 33 levels: one past the contract's 32.
        (
            format!(
                "{{\"type\":\"patch\",\"id\":9,\"ops\":[{{\"op\":\"put\",\"id\":\"a\",\"props\":{{\"x\":{}}}}}]}}",
                nested(33)
            ),
            json!(9),
        ),
    ];
    let done = Arc::new(AtomicBool::new(false));
    let attacker = {
        let (port, file, key, done) = (r.node.port, r.id.clone(), r.edit_key.clone(), done.clone());
        tokio::spawn(async move {
            let mut raw = Raw::join(port, &file, &Hello::key(&key), "").await;
            let until = Instant::now() + Duration::from_secs(2);
            let mut sent = 0u64;
            while Instant::now() < until {
                for (text, id) in &cases {
                    raw.text(text).await;
                    let m = raw.reject().await;
                    assert_eq!(m["code"], "invalid", "{m}");
                    assert_eq!(&m["id"], id, "{m}");
                    sent += 1;
                }
            }
            // 32 levels is fine.
            raw.text(
                &patch_msg(
                    10,
                    vec![put(
                        "a",
                        json!({ "x": serde_json::from_str::<Value>(&nested(32)).unwrap() }),
                    )],
                )
                .to_string(),
            )
            .await;
            raw.expect_ack("32 levels refused").await;
            done.store(true, Ordering::SeqCst);
            sent
        })
    };
    let during = probe.sample_while(&done, 30, 400).await;
    let sent = attacker.await.expect("attacker");

    // Over HTTP: a deep initial document, and deep bodies.
    let body = format!("{{\"name\":\"deep\",\"doc\":{{\"a\":{{\"x\":{deep}}}}}}}");
    let resp = http(
        &r.node,
        "POST",
        "/api/files",
        &[("authorization", &bearer(&r.owner))],
        Some(body.into_bytes()),
    )
    .await;
    resp.assert_error(400, "bad-request");
    for (method, path) in [
        ("POST", "/api/signin".to_string()),
        ("PATCH", format!("/api/files/{}", r.id)),
    ] {
        let resp = http(
            &r.node,
            method,
            &path,
            &[("authorization", &bearer(&r.owner))],
            Some(deep.clone().into_bytes()),
        )
        .await;
        resp.assert_error(400, "bad-request");
    }
    assert!(r.node.alive(), "the node died");
    health_ok(&r.node).await;
    let expected = json!({"a": {"x": serde_json::from_str::<Value>(&nested(32)).unwrap()}});
    assert_untouched(&r, &probe, 1, expected).await;
    report(
        "deep nesting (10,000 levels in props, ops, the message, presence; 33 levels)",
        &base,
        &during,
        json!({"messages": sent, "answer": "reject invalid; HTTP 400 bad-request; 32 levels accepted"}),
    );
}
