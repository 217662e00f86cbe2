//! The two halves of an upgraded connection, as the reader and the writer use them.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;

use crate::linger::Lingering;
use crate::outbox::Outbox;
use crate::write_deadline::Stall;

pub(super) type ReadIo = Box<dyn AsyncRead + Send + Unpin>;
pub(super) type WriteIo = Box<dyn AsyncWrite + Send + Unpin>;

/// The two halves of an upgraded connection, and for a plain TCP socket its
/// sending half to share with the outbox's senders. A plain TCP socket splits without
/// a lock; bytes hyper read past the handshake are put back in front. A write that the
/// socket takes too little of for `patience` fails (see [`Shared`]).
pub(super) fn split(
    upgraded: Upgraded,
    patience: Duration,
    outbox: &Outbox,
) -> (ReadIo, WriteIo, Option<Arc<OwnedWriteHalf>>) {
    match upgraded.downcast::<TokioIo<Lingering>>() {
        Ok(parts) => {
            let stream = parts.io.into_inner().into_inner().into_inner();
            let (read, write) = stream.into_split();
            let read: ReadIo = match early_bytes(parts.read_buf) {
                None => Box::new(read),
                Some(early) => Box::new(std::io::Cursor::new(early).chain(read)),
            };
            let write = Arc::new(write);
            (
                read,
                shared_half(write.clone(), patience, outbox),
                Some(write),
            )
        }
        Err(upgraded) => {
            let (read, write) = tokio::io::split(TokioIo::new(upgraded));
            (Box::new(read), Box::new(write), None)
        }
    }
}

/// `half` as the writer writes to it, shared with the outbox's senders (see [`Shared`]).
pub(super) fn shared_half(
    half: Arc<OwnedWriteHalf>,
    patience: Duration,
    outbox: &Outbox,
) -> WriteIo {
    Box::new(Shared {
        half,
        stall: Stall::new(patience),
        outbox: outbox.clone(),
    })
}

/// A sending half the writer shares with the outbox's senders. Who writes when is
/// the outbox's business (its line); this only waits for the socket to take bytes, and
/// gives up, with `TimedOut`, once a write has waited `patience` and the socket has taken
/// less than [`MIN_PROGRESS`](crate::write_deadline::MIN_PROGRESS) meanwhile: a peer that
/// stops reading, or reads a trickle (holding a large welcome, say), holds its queue and
/// the node's budget for large messages no longer than that.
struct Shared {
    half: Arc<OwnedWriteHalf>,
    stall: Stall,
    /// Told when writes wait and progress: a socket holding a large message that takes
    /// nothing for long makes way for others (`outbox::Budget`).
    outbox: Outbox,
}

impl AsyncWrite for Shared {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        loop {
            let stream: &TcpStream = self.half.as_ref().as_ref();
            match stream.poll_write_ready(cx) {
                Poll::Pending => {
                    self.outbox.write_waits();
                    return self
                        .stall
                        .wait(cx, "the peer took nothing of what it was sent");
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {}
            }
            match stream.try_write(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                done => {
                    self.stall.wrote(*done.as_ref().unwrap_or(&0));
                    self.outbox.write_progressed();
                    return Poll::Ready(done);
                }
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // The connection ends when its last holder lets go of it.
        Poll::Ready(Ok(()))
    }
}

/// The bytes hyper read past the handshake, in a buffer of their own: hyper's are a
/// view into its whole read buffer (8 KB), which would stay allocated for the life
/// of the socket.
fn early_bytes(read_buf: Bytes) -> Option<Bytes> {
    (!read_buf.is_empty()).then(|| Bytes::copy_from_slice(&read_buf))
}

#[cfg(test)]
mod tests;
