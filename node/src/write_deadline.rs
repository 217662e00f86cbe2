//! A connection's stream with a deadline on writes: an HTTP answer the client takes
//! no bytes of for `ATRIUM_WRITE_TIMEOUT_MS` fails with `TimedOut`, and hyper closes
//! the connection. Without it a client that asks for a document and never reads
//! would keep the connection, its place under the caps and the unsent answer for good.
//!
//! Only writes that wait are timed: the timer is made when the socket first refuses
//! bytes and dropped at the next progress, so a connection that keeps up costs nothing.
//! An upgraded socket leaves this behind (`socket/io.rs` takes the stream out) and
//! times its writes by `ATRIUM_PING_TIMEOUT_MS` instead, with the same [`Stall`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

pub struct WriteDeadline {
    stream: TcpStream,
    stall: Stall,
}

/// How long a writer has waited for its peer to take bytes, and the end of its patience:
/// the timer is made when a write first waits and dropped at the next progress, so a peer
/// that keeps up costs nothing.
pub struct Stall {
    patience: Duration,
    /// Set while a write waits; fires `patience` after it began waiting.
    since: Option<Pin<Box<Sleep>>>,
}

impl Stall {
    pub fn new(patience: Duration) -> Self {
        Self {
            patience,
            since: None,
        }
    }

    /// The peer took bytes.
    pub fn progressed(&mut self) {
        self.since = None;
    }

    /// A write must wait: pending while patience lasts, then `TimedOut` (`what` says why).
    pub fn wait<T>(&mut self, cx: &mut Context<'_>, what: &'static str) -> Poll<io::Result<T>> {
        let patience = self.patience;
        let since = self
            .since
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(patience)));
        match since.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, what))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl WriteDeadline {
    pub fn new(stream: TcpStream, timeout: Duration) -> Self {
        Self {
            stream,
            stall: Stall::new(timeout),
        }
    }

    pub fn into_inner(self) -> TcpStream {
        self.stream
    }

    /// What a write's poll came to: progress clears the stall; waiting starts it, or
    /// fails once it has lasted the timeout.
    fn judge<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(done) => {
                self.stall.progressed();
                Poll::Ready(done)
            }
            Poll::Pending => self
                .stall
                .wait(cx, "the client took none of the answer in time"),
        }
    }
}

impl AsyncRead for WriteDeadline {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteDeadline {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.judge(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.judge(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_flush(cx);
        self.judge(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.judge(cx, polled)
    }
}
