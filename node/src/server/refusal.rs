//! Connections over `ATRIUM_MAX_CONNECTIONS`: a short 503, then closed.

use std::sync::Arc;

/// Refusals being written at once; past this a refused connection is closed
/// without an answer (an answer costs a task and a descriptor for up to a second).
pub(super) const REFUSALS_IN_FLIGHT: usize = 64;

/// Answers a connection over `ATRIUM_MAX_CONNECTIONS` with 503 `unavailable`
/// (`Retry-After: 2`, `Connection: close`) and closes it; when too many refusals
/// are already under way, closes it at once.
pub(super) fn refuse(stream: tokio::net::TcpStream, refusing: &Arc<tokio::sync::Semaphore>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(permit) = refusing.clone().try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut stream = stream;
        let body = r#"{"error":{"code":"unavailable","message":"the node has as many connections as it may take; try again shortly"}}"#;
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
             retry-after: 2\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let second = std::time::Duration::from_secs(1);
        if tokio::time::timeout(second, stream.write_all(answer.as_bytes()))
            .await
            .is_ok_and(|w| w.is_ok())
        {
            let _ = stream.shutdown().await;
            // Read what the client sent, briefly, so closing does not reset the
            // connection before the client has read the answer.
            let mut sink = [0u8; 4096];
            let _ = tokio::time::timeout(second, async {
                let mut left = 64 * 1024;
                while left > 0 {
                    match stream.read(&mut sink).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => left -= n.min(left),
                    }
                }
            })
            .await;
        }
    });
}
