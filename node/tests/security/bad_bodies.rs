//! Bad request bodies: API errors never echo the JSON parser.

use super::*;

/// A body of the wrong shape gets a fixed sentence: nothing of the JSON
/// parser's own text (types, positions, the names of the node's structs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_errors_never_echo_the_json_parser() {
    let node = node(&[]).await;
    let token = new_account(&node, "parser").await;
    let file = s(&create_file(&node, &token, "Shape", None).await["id"]).to_string();
    let bodies: [(&str, String, Option<&str>); 6] = [
        ("POST", "/api/signin".into(), None),
        ("POST", "/api/signup".into(), None),
        ("POST", "/api/files".into(), Some(token.as_str())),
        ("PATCH", format!("/api/files/{file}"), Some(token.as_str())),
        ("POST", "/api/signin".into(), None),
        ("PATCH", format!("/api/files/{file}"), Some(token.as_str())),
    ];
    // A document nested past the parser's limit: its error was the parser's, with a position.
    let deep = format!(
        r#"{{"name": "deep", "doc": {{"n": {{"a": {}1{}}}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let payloads: [&[u8]; 6] = [
        br#"{"email": 5, "password": []}"#,
        br#"{"email": "a@b.c", "password": "long enough", "name": {"x": 1}}"#,
        br#"{"name": ["not", "a", "name"]}"#,
        br#"{"link": 42}"#,
        br#"{"email": "a@b.c", "password": "x"#,
        b"[1, 2, 3",
    ];
    let mut checked = 0;
    for ((method, path, token), payload) in bodies.iter().zip(payloads) {
        let auth = token.map(bearer);
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("authorization", a)])
            .unwrap_or_default();
        let r = http(&node, method, path, &headers, Some(payload.to_vec())).await;
        r.assert_error(400, "bad-request");
        let message = r.body()["error"]["message"].as_str().unwrap_or("");
        for leak in [
            "line ",
            "column",
            "invalid type",
            "expected",
            "`",
            "EOF",
            "integer",
            "sequence",
        ] {
            assert!(
                !message.contains(leak),
                "{method} {path}: the message carries the parser's text ({leak:?}): {message}"
            );
        }
        checked += 1;
    }
    // The document's own checks name what is wrong in the route's words; never a position.
    let auth = bearer(&token);
    let r = http(
        &node,
        "POST",
        "/api/files",
        &[("authorization", auth.as_str())],
        Some(deep.into_bytes()),
    )
    .await;
    r.assert_error(400, "bad-request");
    let message = r.body()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    for leak in ["line ", "column", "recursion", "EOF"] {
        assert!(
            !message.contains(leak),
            "a deep document: the parser's text ({leak:?}): {message}"
        );
    }
    checked += 1;
    figure(json!({"case": "parser text in errors", "bodies": checked, "leaks": 0}));
}

/// A name typed over HTTP (a person's, a file's, a version's title) cannot print as nothing
/// or hide text, so nobody can look like somebody else: line separators, blanks, invisible
/// operators, annotation marks and names of joiners alone are refused 400 `bad-request`
/// where a plain name is taken (the eleventh review found these let through).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_print_as_nothing_are_refused_everywhere() {
    let node = node(&[]).await;
    let token = new_account(&node, "names").await;
    let file = s(&create_file(&node, &token, "Plain", None).await["id"]).to_string();
    let auth = bearer(&token);
    let with = [("authorization", auth.as_str())];
    let mut refused = 0;
    for name in [
        "Alice\u{2028}(owner)",
        "\u{2800}",
        "Al\u{00AD}ice",
        "\u{FFF9}Alice\u{FFFA}Bob\u{FFFB}",
        "a\u{2062}b",
        "\u{200D}\u{FE0F}",
    ] {
        let signup = json!({"email": unique_email("blank"), "password": "long enough password", "name": name});
        let asks = [
            ("POST", "/api/signup".to_owned(), signup, &[][..]),
            (
                "POST",
                "/api/files".to_owned(),
                json!({"name": name}),
                &with[..],
            ),
            (
                "PATCH",
                format!("/api/files/{file}"),
                json!({"name": name}),
                &with[..],
            ),
            (
                "POST",
                format!("/api/files/{file}/versions"),
                json!({"title": name}),
                &with[..],
            ),
        ];
        for (method, path, body, headers) in asks {
            let r = http(
                &node,
                method,
                &path,
                headers,
                Some(body.to_string().into_bytes()),
            )
            .await;
            assert_eq!(r.status, 400, "{method} {path} with {name:?}: {}", r.text);
            r.assert_error(400, "bad-request");
            refused += 1;
        }
    }
    // Joiners inside a name that has letters stay: scripts and emoji need them.
    let kept = "👨\u{200D}👩\u{200D}👧";
    let r = http(
        &node,
        "PATCH",
        &format!("/api/files/{file}"),
        &with,
        Some(json!({"name": kept}).to_string().into_bytes()),
    )
    .await;
    r.assert_status(200);
    figure(json!({"case": "names that print as nothing", "refused": refused}));
}
