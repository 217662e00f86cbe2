//! Before hello: what a socket may send is small and little, and an upgrade
//! from an origin off the list is refused.

use super::*;

/// Before the hello, a socket may send only small messages, and only a few
/// that are not a hello (1 KB on the wire could be 1 MiB to parse).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_hello_messages_are_small_and_few() {
    let _serial = SERIAL.lock().await;
    let r = room(&[]).await;
    let port = r.node.port;
    // 64 KiB of spaces, deflated to a few hundred bytes: over the 16 KiB before hello.
    let mut a = Raw::connect(port, &r.id, DEFLATE_HEADER, None).await;
    let padded = format!(
        "{{\"type\":\"hello\",\"client\":\"c1\"{}}}",
        " ".repeat(64 * 1024)
    );
    a.send(&client_frame(TEXT_DEFLATED, &deflate(padded.as_bytes())))
        .await;
    assert_eq!(a.close_code(WAIT).await, Some(1009));
    // Seventeen messages that are not a hello: sixteen rejects, then 4000.
    let mut b = Raw::connect(port, &r.id, "", None).await;
    for _ in 0..17 {
        b.text(r#"{"type":"presence","cursor":[1,2]}"#).await;
    }
    let mut rejects = 0;
    let code = loop {
        match b.next(WAIT).await {
            Got::Text(m) if m["type"] == "reject" => rejects += 1,
            Got::Close(code) => break code,
            other => panic!("expected rejects then a close, got {other:?}"),
        }
    };
    assert_eq!((rejects, code), (16, Some(4000)));
    // A hello after a few mistakes still gets in.
    let mut c = Raw::connect(port, &r.id, "", None).await;
    c.text("not json").await;
    c.text(&Hello::key(&r.view_key).to_json().to_string()).await;
    assert_eq!(c.reject().await["code"], "invalid");
    c.welcome().await;
}

/// With `ATRIUM_ALLOWED_ORIGINS` set, a page of another origin cannot open a
/// socket (403 before the upgrade); listed origins and clients without an
/// `Origin` header can. Unset, every origin may (the default, documented).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_from_unlisted_origins_are_refused_when_a_list_is_set() {
    let _serial = SERIAL.lock().await;
    let r = room(&[("ATRIUM_ALLOWED_ORIGINS", "https://app.example.com")]).await;
    let port = r.node.port;
    let evil = upgrade_answer(port, &r.id, "Origin: https://evil.example\r\n").await;
    assert!(evil.starts_with("HTTP/1.1 403"), "{evil}");
    let ok = upgrade_answer(port, &r.id, "Origin: https://app.example.com\r\n").await;
    assert!(ok.starts_with("HTTP/1.1 101"), "{ok}");
    let none = upgrade_answer(port, &r.id, "").await;
    assert!(none.starts_with("HTTP/1.1 101"), "{none}");
    let open = room(&[]).await;
    let any = upgrade_answer(open.node.port, &open.id, "Origin: https://evil.example\r\n").await;
    assert!(any.starts_with("HTTP/1.1 101"), "{any}");
}
