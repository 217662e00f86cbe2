//! Connections the node will not serve: over `ATRIUM_MAX_CONNECTIONS` or at the memory
//! budget (503), or over their address's `ATRIUM_CONNECTIONS_PER_IP` (429). A short answer,
//! then closed.

use std::sync::Arc;

/// Refusals being written at once; past this a refused connection is closed
/// without an answer (an answer costs a task, about 5 KiB, and a descriptor for up to two
/// seconds). Enough that a hundred sockets refused together at the memory budget are each
/// told why.
pub(super) const REFUSALS_IN_FLIGHT: usize = 256;

/// Why a connection is refused, and what it is told.
#[derive(Clone, Copy)]
pub(super) enum Refusal {
    /// The node is at `ATRIUM_MAX_CONNECTIONS`.
    NodeFull,
    /// The client's address is at `ATRIUM_CONNECTIONS_PER_IP`.
    AddressFull,
    /// The node is at its memory budget (`ATRIUM_MEMORY_BUDGET`).
    MemoryBudget,
}

impl Refusal {
    fn status_line(self) -> &'static str {
        match self {
            Self::NodeFull | Self::MemoryBudget => "503 Service Unavailable",
            Self::AddressFull => "429 Too Many Requests",
        }
    }

    fn body(self) -> &'static str {
        match self {
            Self::NodeFull => {
                r#"{"error":{"code":"unavailable","message":"the node has as many connections as it may take; try again shortly"}}"#
            }
            Self::AddressFull => {
                r#"{"error":{"code":"rate-limited","message":"this address has as many connections open as it may; close one or try again shortly"}}"#
            }
            Self::MemoryBudget => {
                r#"{"error":{"code":"unavailable","message":"the node is at its memory budget; try again shortly"}}"#
            }
        }
    }
}

/// Answers a refused connection (`Retry-After: 2`, `Connection: close`) and closes
/// it; when too many refusals are already under way, closes it at once.
pub(super) fn refuse(
    stream: tokio::net::TcpStream,
    why: Refusal,
    refusing: &Arc<tokio::sync::Semaphore>,
) {
    use tokio::io::AsyncWriteExt;
    let Ok(permit) = refusing.clone().try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut stream = stream;
        let body = why.body();
        let answer = format!(
            "HTTP/1.1 {}\r\ncontent-type: application/json\r\n\
             retry-after: 2\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            why.status_line(),
            body.len()
        );
        let second = std::time::Duration::from_secs(1);
        if tokio::time::timeout(second, stream.write_all(answer.as_bytes()))
            .await
            .is_ok_and(|w| w.is_ok())
        {
            // Read what the client sent, briefly, so closing does not reset the
            // connection before the client has read the answer.
            crate::linger::close_gently(stream, second, 64 * 1024).await;
        }
    });
}
