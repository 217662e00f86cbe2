//! The WebSocket upgrade by hand, for raw-frame clients that must control every byte.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long the upgrade's answer may take.
const WAIT: Duration = Duration::from_secs(10);

/// Asks `stream` (connected to `127.0.0.1:port`) to upgrade `path`, with `extra` header
/// lines (each ending in CRLF). The answer's head, and the bytes that came after it
/// (the first frames); the caller checks for `HTTP/1.1 101`.
pub async fn upgrade(
    stream: &mut TcpStream,
    port: u16,
    path: &str,
    extra: &str,
) -> (String, Vec<u8>) {
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n{extra}\r\n"
    );
    stream
        .write_all(req.as_bytes())
        .await
        .expect("send upgrade");
    let mut buf = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .expect("upgrade answer timed out")
            .expect("read upgrade answer");
        assert!(n > 0, "connection closed during the upgrade");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    buf.drain(..end);
    (head, buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_head_and_what_follows_are_apart() {
        let answer = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi";
        let (port, server) = crate::http::tests::answer_once(answer.to_vec()).await;
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (head, rest) = upgrade(&mut stream, port, "/files/f/ws", "Origin: x\r\n").await;
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert_eq!(rest, b"\x81\x02hi");
        let asked = server.await.unwrap();
        assert!(asked.starts_with("GET /files/f/ws HTTP/1.1\r\n"), "{asked}");
        assert!(asked.contains("Origin: x\r\n"), "{asked}");
    }
}
