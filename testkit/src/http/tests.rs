use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

/// A loopback server that reads one request's first bytes and writes `answer` back; its
/// port, and the task that returns what was asked.
pub(crate) async fn answer_once(answer: Vec<u8>) -> (u16, JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = s.read(&mut buf).await.unwrap();
        s.write_all(&answer).await.unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    });
    (port, server)
}

#[tokio::test]
async fn a_request_gets_status_headers_and_json() {
    let body = r#"{"error":{"code":"nope","message":"no"}}"#;
    let answer = format!(
        "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\nx-seen: yes\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let (port, server) = answer_once(answer.into_bytes()).await;
    let resp = request(port, "POST", "/x", &[("x-test", "1")], Some(b"{}".to_vec())).await;
    resp.assert_error(404, "nope");
    assert_eq!(resp.header("x-seen").as_deref(), Some("yes"));
    let head = server.await.unwrap().to_ascii_lowercase();
    assert!(head.starts_with("post /x http/1.1"), "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    assert!(head.contains("x-test: 1"), "{head}");
}

#[tokio::test]
async fn no_server_is_none() {
    let port = crate::env::free_port();
    assert!(try_request(port, "GET", "/", &[], None).await.is_none());
}
