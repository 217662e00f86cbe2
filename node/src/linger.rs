//! Closing a connection without losing its answer. The node may answer before it has read
//! all a client sent (a 503 at the memory budget halfway through an upload, a 413 for a
//! body declared too large); closing a socket with unread bytes in it makes the kernel
//! reset the connection, and a reset can throw away the answer before the client reads
//! it: the client sees "connection reset", not the 503 and its `Retry-After`. So a
//! connection hyper lets go of is shut for writing, then read and the bytes dropped for a
//! while ([`LINGER`], ending sooner after [`LINGER_IDLE`] without a byte or at the
//! client's end), keeping its place under the connection caps meanwhile.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::limits::ConnectionSlot;
use crate::write_deadline::WriteDeadline;

/// The longest a closed connection is read for; as long as a body may take to arrive by
/// default (`ATRIUM_BODY_TIMEOUT_MS`), so an upload refused halfway can finish arriving.
pub const LINGER: Duration = Duration::from_secs(10);

/// A lingering connection with nothing to read for this long is closed.
pub const LINGER_IDLE: Duration = Duration::from_secs(2);

/// Shuts `stream` for writing, then reads and drops what the client still sends: up to
/// `most` bytes, for at most `within`, until the client ends or sends nothing for
/// [`LINGER_IDLE`].
pub async fn close_gently<S>(mut stream: S, within: Duration, most: usize)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = tokio::time::timeout(LINGER_IDLE, stream.shutdown()).await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(within, async {
        let mut left = most;
        while left > 0 {
            match tokio::time::timeout(LINGER_IDLE, stream.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
                _ => break,
            }
        }
    })
    .await;
}

/// Only [`Lingering::into_inner`] and drop take the stream, and both take `self`.
const TAKEN_ONLY_WITH_SELF: &str = "a connection's stream is there until it is taken";

/// A connection's stream that, when dropped, lingers (see the module) in a task of its
/// own, holding the connection's place until it is closed.
pub struct Lingering {
    /// Always there until [`Lingering::into_inner`] or drop takes it.
    stream: Option<WriteDeadline>,
    place: Option<Arc<ConnectionSlot>>,
}

impl Lingering {
    pub fn new(stream: WriteDeadline, place: Arc<ConnectionSlot>) -> Self {
        Self {
            stream: Some(stream),
            place: Some(place),
        }
    }

    /// The stream, for a connection that goes on as a socket: it closes its own way.
    pub fn into_inner(mut self) -> WriteDeadline {
        self.stream.take().expect(TAKEN_ONLY_WITH_SELF)
    }

    fn stream(&mut self) -> Pin<&mut WriteDeadline> {
        Pin::new(self.stream.as_mut().expect(TAKEN_ONLY_WITH_SELF))
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let (Some(stream), Ok(runtime)) =
            (self.stream.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let place = self.place.take();
        runtime.spawn(async move {
            close_gently(stream, LINGER, usize::MAX).await;
            drop(place);
        });
    }
}

impl AsyncRead for Lingering {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.stream().poll_read(cx, buf)
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.stream().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.stream().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.stream().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.stream().poll_shutdown(cx)
    }
}
