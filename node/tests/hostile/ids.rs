//! Ids with ../, %00 and non-ASCII.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_with_dots_nul_and_non_ascii_are_refused() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;
    let owner = bearer(&r.owner);
    let id = &r.id;

    // HTTP: every bad id is 400 bad-request, before any work (with a valid token).
    let long = "a".repeat(65);
    let bad_ids = [
        "..",
        "%2e%2e",
        "..%2F..%2Fetc%2Fpasswd",
        "%00",
        "a%00b",
        "%C3%A9t%C3%A9",
        "%E5%90%8D",
        "a%20b",
        "a.b",
        long.as_str(),
    ];
    let mut http_checked = 0;
    for bad in bad_ids {
        for path in [
            format!("/api/files/{bad}"),
            format!("/api/files/{bad}/doc"),
            format!("/api/files/{bad}/keys"),
        ] {
            let method = if path.ends_with("/keys") {
                "POST"
            } else {
                "GET"
            };
            let resp = http(&r.node, method, &path, &[("authorization", &owner)], None).await;
            resp.assert_error(400, "bad-request");
            http_checked += 1;
        }
        let resp = http(
            &r.node,
            "GET",
            &format!("/files/{bad}/ws"),
            &[
                ("upgrade", "websocket"),
                ("connection", "Upgrade"),
                ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ("sec-websocket-version", "13"),
            ],
            None,
        )
        .await;
        resp.assert_error(400, "bad-request");
        http_checked += 1;
    }
    // A valid id with something after it, in the same segment.
    for tail in ["%00", "%2F..", "%C3%A9"] {
        let resp = get(&r.node, &format!("/api/files/{id}{tail}"), Some(&r.owner)).await;
        resp.assert_error(400, "bad-request");
        http_checked += 1;
    }
    // Raw bytes that are not ASCII, and a raw NUL, in the request line: refused
    // with 400 by the HTTP parser, never served.
    for path in [
        &b"/api/files/\xc3\xa9t\xc3\xa9"[..],
        &b"/api/files/a\x00b"[..],
    ] {
        let mut req = b"GET ".to_vec();
        req.extend_from_slice(path);
        req.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let answer = raw_http(port, &req).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{path:?}: {answer:?}");
        http_checked += 1;
    }

    // The socket: bad client ids in a hello are rejected, the socket keeps
    // waiting for a good hello.
    let mut raw = Raw::connect(port, id, "", None).await;
    let bad_clients = [
        "../etc",
        "..",
        "a\u{0}b",
        "%00",
        "h\u{e9}llo",
        "\u{540d}\u{524d}",
        "",
        long.as_str(),
    ];
    for c in bad_clients {
        raw.text(&json!({"type": "hello", "key": r.edit_key, "client": c}).to_string())
            .await;
        let m = raw.reject().await;
        assert_eq!(
            (m["code"].clone(), m["id"].clone()),
            (json!("invalid"), Value::Null),
            "{c:?}"
        );
    }
    // A guest name with controls, a path and non-ASCII: shown as plain text.
    let hello = json!({"type": "hello", "key": r.edit_key, "client": secret(),
                       "name": "Ann\u{0}\u{7}\n ../%00 \u{e9}\u{540d}"});
    raw.text(&hello.to_string()).await;
    let w = raw.welcome().await;
    assert_eq!(own_entry(&w)["name"], "Ann ../%00 \u{e9}\u{540d}");

    // Node ids, pages and selections.
    let mut sent = 0;
    let bad_nodes = [
        "../x",
        "..",
        "a/b",
        "a\u{0}b",
        "%00",
        "\u{e9}",
        "x\u{200b}",
        "",
        long.as_str(),
    ];
    for (i, bad) in bad_nodes.iter().enumerate() {
        let op_id = 100 + i as u64;
        for op in [put(bad, json!({})), set(bad, json!({"x": 1})), delete(bad)] {
            raw.text(&patch_msg(op_id, vec![op]).to_string()).await;
            let m = raw.reject().await;
            assert_eq!(
                (m["code"].clone(), m["id"].clone()),
                (json!("invalid"), json!(op_id)),
                "{bad:?}"
            );
            sent += 1;
        }
        for presence in [
            json!({"type": "presence", "page": bad}),
            json!({"type": "presence", "sel": [bad]}),
        ] {
            raw.text(&presence.to_string()).await;
            let m = raw.reject().await;
            assert_eq!(
                (m["code"].clone(), m["id"].clone()),
                (json!("invalid"), Value::Null),
                "{bad:?}"
            );
            sent += 1;
        }
    }
    // Prop names and values are free text: they round-trip byte for byte.
    let odd = json!({"../..": "%00", "a\u{0}b": "\u{e9}\u{540d}\u{1f600}", "\u{540d}": "../../etc/passwd"});
    raw.text(&patch_msg(200, vec![put("odd", odd.clone())]).to_string())
        .await;
    raw.expect_ack("free-text props refused").await;
    let during = probe.sample(30).await;

    // Nothing was made on disk from an id: the data folder holds the store only.
    let mut files: Vec<String> = std::fs::read_dir(&r.node.data)
        .expect("data folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(
        files.iter().all(|f| f.starts_with("atrium.sqlite3")),
        "unexpected files in the data folder: {files:?}"
    );
    assert_untouched(&r, &probe, 1, json!({ "odd": odd })).await;
    report(
        "ids with ../, %00, non-ASCII (HTTP paths, hello client ids, node ids, pages, selections)",
        &base,
        &during,
        json!({"http_requests": http_checked, "socket_messages": sent + bad_clients.len(),
               "answer": "HTTP 400 bad-request; reject invalid; prop text round-trips"}),
    );
}
