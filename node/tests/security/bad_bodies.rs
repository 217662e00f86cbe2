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
    figure(json!({"case": "parser text in errors", "bodies": checked, "leaks": 0}));
}
