//! Request heads (the request line and headers) held to what a client needs: at most
//! [`HEAD_BYTES`] within [`HEAD_TIME`] of its first byte, and no more than [`HEADS_BYTES`] of
//! unfinished heads across the router (a head that arrives whole is taken however full). The
//! HTTP library reads a head of up to 1 MiB, waits up to a minute for each read of it and
//! parses it again from its start after every read: a thousand connections that never
//! finished their heads held 1.1 GiB, and heads sent 200 bytes at a time cost a core.
//!
//! [`HeadGuard`] wraps a client's connection and watches the bytes read from it until the
//! blank line that ends a head; past a limit the read fails, and the library closes the
//! connection. Then everything passes through untouched (the body, an upgraded socket's
//! frames) until the connection's next request, which [`HeadWatch::next_request`] announces.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use pingora::protocols::raw_connect::ProxyDigest;
use pingora::protocols::{
    GetProxyDigest, GetSocketDigest, GetTimingDigest, Peek, Shutdown, SocketDigest, Ssl, Stream,
    TimingDigest, UniqueID, UniqueIDType,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most a request's head may take (the node's limit too).
pub const HEAD_BYTES: usize = 32 * 1024;

/// How long a head may take from its first byte.
pub const HEAD_TIME: Duration = Duration::from_secs(10);

/// The most the router holds of heads not yet finished, all connections together, counted
/// twice over (a head's buffer grows by doubling).
pub const HEADS_BYTES: usize = 64 * 1024 * 1024;

/// Bytes of unfinished heads across the router.
#[derive(Default)]
pub struct Heads {
    unfinished: AtomicUsize,
}

impl Heads {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Bytes of heads read and not yet finished, now.
    pub fn unfinished(&self) -> usize {
        self.unfinished.load(Ordering::Relaxed)
    }
}

/// Where a connection is in its request: reading its head, or past it.
struct Head {
    /// Bytes of this head read so far (counted in [`Heads`] until it ends).
    read: usize,
    /// Whether a byte other than a line end came yet: empty lines before a request line are
    /// skipped by the HTTP library (and count against the limits here), never its end.
    began: bool,
    /// The last two bytes read, to find a blank line across reads.
    tail: [u8; 2],
    /// Past the head: bytes pass untouched.
    done: bool,
    /// When the head must have ended, from its first byte.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Head {
    fn new() -> Self {
        Self {
            read: 0,
            began: false,
            tail: [0; 2],
            done: false,
            deadline: None,
        }
    }

    /// Where in `bytes` the head ends (just past its blank line), if it does: a line feed
    /// right after a line feed, or after a line feed and a carriage return, once the request
    /// line has begun.
    fn end_in(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            if !self.began {
                if b == b'\r' || b == b'\n' {
                    continue;
                }
                self.began = true;
            }
            let [before, last] = self.tail;
            if b == b'\n' && (last == b'\n' || (last == b'\r' && before == b'\n')) {
                return Some(i + 1);
            }
            self.tail = [last, b];
        }
        None
    }
}

/// The connection's side of the watch: the proxy's loop says when a new request begins.
#[derive(Clone, Default)]
pub struct HeadWatch(Arc<AtomicBool>);

impl HeadWatch {
    /// The connection is about to carry its next request: its next bytes are a head.
    pub fn next_request(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A client's connection, its heads held to their limits.
pub struct HeadGuard {
    inner: Stream,
    heads: Arc<Heads>,
    watch: HeadWatch,
    head: Head,
}

impl HeadGuard {
    /// Wraps `inner`, whose first bytes are a head.
    pub fn new(inner: Stream, heads: Arc<Heads>) -> (Self, HeadWatch) {
        let watch = HeadWatch::default();
        let guard = Self {
            inner,
            heads,
            watch: watch.clone(),
            head: Head::new(),
        };
        (guard, watch)
    }

    /// The connection under the guard.
    pub fn connection(&self) -> &Stream {
        &self.inner
    }

    /// Gives back what this head counted across the router.
    fn release(&mut self) {
        let read = std::mem::take(&mut self.head.read);
        self.heads.unfinished.fetch_sub(2 * read, Ordering::Relaxed);
    }

    /// Counts `n` more bytes of this head, refusing past a limit. The router-wide bound is
    /// for heads left unfinished (`finished`: this read ended it), so that a full router
    /// still takes the everyday head that arrives whole.
    fn count(&mut self, n: usize, finished: bool) -> io::Result<()> {
        self.head.read += n;
        let all = self.heads.unfinished.fetch_add(2 * n, Ordering::Relaxed) + 2 * n;
        if self.head.read > HEAD_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head over 32 KiB",
            ));
        }
        if all > HEADS_BYTES && !finished {
            return Err(io::Error::other(
                "too many request heads unfinished across the router",
            ));
        }
        Ok(())
    }
}

impl Drop for HeadGuard {
    fn drop(&mut self) {
        self.release();
    }
}

impl AsyncRead for HeadGuard {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.watch.0.swap(false, Ordering::AcqRel) {
            this.release();
            this.head = Head::new();
        }
        if this.head.done {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        if let Some(deadline) = this.head.deadline.as_mut() {
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "request head took over 10 s",
                )));
            }
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let new = &buf.filled()[before..];
        if new.is_empty() {
            return Poll::Ready(Ok(()));
        }
        if this.head.deadline.is_none() {
            this.head.deadline = Some(Box::pin(tokio::time::sleep(HEAD_TIME)));
        }
        match this.head.end_in(new) {
            Some(end) => {
                this.count(end, true)?;
                this.head.done = true;
                this.head.deadline = None;
                this.release();
            }
            None => {
                let n = new.len();
                this.count(n, false)?;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for HeadGuard {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[async_trait]
impl Shutdown for HeadGuard {
    async fn shutdown(&mut self) {
        self.inner.shutdown().await
    }
}

impl UniqueID for HeadGuard {
    fn id(&self) -> UniqueIDType {
        self.inner.id()
    }
}

/// The router speaks plain TCP to clients: no TLS to report.
impl Ssl for HeadGuard {}

impl GetTimingDigest for HeadGuard {
    fn get_timing_digest(&self) -> Vec<Option<TimingDigest>> {
        self.inner.get_timing_digest()
    }

    fn get_read_pending_time(&self) -> Duration {
        self.inner.get_read_pending_time()
    }

    fn get_write_pending_time(&self) -> Duration {
        self.inner.get_write_pending_time()
    }
}

impl GetProxyDigest for HeadGuard {
    fn get_proxy_digest(&self) -> Option<Arc<ProxyDigest>> {
        self.inner.get_proxy_digest()
    }

    fn set_proxy_digest(&mut self, digest: ProxyDigest) {
        self.inner.set_proxy_digest(digest)
    }
}

impl GetSocketDigest for HeadGuard {
    fn get_socket_digest(&self) -> Option<Arc<SocketDigest>> {
        self.inner.get_socket_digest()
    }

    fn set_socket_digest(&mut self, digest: SocketDigest) {
        self.inner.set_socket_digest(digest)
    }
}

#[async_trait]
impl Peek for HeadGuard {
    /// Peeking reads nothing, so the guard lets it through.
    async fn try_peek(&mut self, buf: &mut [u8]) -> io::Result<bool> {
        self.inner.try_peek(buf).await
    }
}

impl fmt::Debug for HeadGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadGuard")
            .field("inner", &self.inner)
            .field("head_read", &self.head.read)
            .field("head_done", &self.head.done)
            .finish()
    }
}

#[cfg(test)]
mod tests;
