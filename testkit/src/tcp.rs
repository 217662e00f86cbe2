//! Raw TCP connections for tests of connection limits: from a chosen loopback address, and
//! the first words a server says on one.

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// A TCP connection to `127.0.0.1:port` from `source`: any 127/8 address is this host, so a
/// test can be several clients.
pub async fn connect_from(source: [u8; 4], port: u16) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(std::net::SocketAddr::from((source, 0)))
        .expect("bind a loopback address");
    socket
        .connect(([127, 0, 0, 1], port).into())
        .await
        .expect("connect")
}

/// What the server says on `stream` within a second (up to 512 bytes; empty if nothing).
pub async fn first_words(stream: &mut TcpStream) -> String {
    let mut head = [0u8; 512];
    match tokio::time::timeout(Duration::from_secs(1), stream.read(&mut head)).await {
        Ok(Ok(n)) => String::from_utf8_lossy(&head[..n]).to_string(),
        _ => String::new(),
    }
}
