//! A connection's stream with a deadline on writes: an HTTP answer the client takes
//! too little of (under [`MIN_PROGRESS`]) for `ATRIUM_WRITE_TIMEOUT_MS` fails with
//! `TimedOut`, and hyper closes the connection. Without it a client that asks for a
//! document and never reads, or reads a trickle, would keep the connection, its place
//! under the caps and the unsent answer for good.
//!
//! Only writes that wait are timed: the timer is made when the socket first refuses
//! bytes and dropped once the peer has taken enough, or a write goes through without
//! waiting, so a connection that keeps up costs nothing.
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
    /// Bytes the peer took since the wait began.
    taken: usize,
    /// Whether the last write was told to wait (so the next bytes written are what the
    /// peer took while it waited, not room it had all along).
    was_pending: bool,
}

/// What a peer must take, once a write has had to wait for it, before the wait counts as
/// over: a peer that reads a few bytes now and then (4 KiB every 40 s) held a welcome or
/// an answer of a megabyte for as long as it liked, each read starting the patience again
/// (the eleventh review). Past the patience with less taken, the write fails as if nothing
/// had been. 16 KiB in 30 s is 546 bytes a second: any link a person can work over.
pub const MIN_PROGRESS: usize = 16 * 1024;

impl Stall {
    pub fn new(patience: Duration) -> Self {
        Self {
            patience,
            since: None,
            taken: 0,
            was_pending: false,
        }
    }

    /// A write put `bytes` on the socket. Right after a wait they are what the peer took
    /// meanwhile, and the wait ends once that comes to [`MIN_PROGRESS`]; a write that did
    /// not wait shows the peer keeping up, and ends any wait.
    pub fn wrote(&mut self, bytes: usize) {
        if !std::mem::take(&mut self.was_pending) {
            self.since = None;
        }
        if self.since.is_none() {
            self.taken = 0;
            return;
        }
        self.taken = self.taken.saturating_add(bytes);
        if self.taken >= MIN_PROGRESS {
            self.since = None;
            self.taken = 0;
        }
    }

    /// A write must wait: pending while patience lasts, then `TimedOut` (`what` says why).
    pub fn wait<T>(&mut self, cx: &mut Context<'_>, what: &'static str) -> Poll<io::Result<T>> {
        let patience = self.patience;
        let since = self
            .since
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(patience)));
        match since.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, what))),
            Poll::Pending => {
                self.was_pending = true;
                Poll::Pending
            }
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

    /// What a write's poll came to (`written`: the bytes it put on the socket): bytes
    /// written count towards ending a stall (see [`Stall::wrote`]); waiting starts it, or
    /// fails once it has lasted the timeout.
    fn judge<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
        written: impl FnOnce(&T) -> Option<usize>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(done) => {
                // A flush or a shutdown that went through says nothing of the peer.
                if let Some(n) = done.as_ref().ok().and_then(written) {
                    self.stall.wrote(n);
                }
                Poll::Ready(done)
            }
            Poll::Pending => self
                .stall
                .wait(cx, "the client took too little of the answer in time"),
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
        self.judge(cx, polled, |n| Some(*n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.judge(cx, polled, |n| Some(*n))
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_flush(cx);
        self.judge(cx, polled, |_| None)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.judge(cx, polled, |_| None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed_out(p: Poll<io::Result<()>>) -> bool {
        matches!(p, Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::TimedOut)
    }

    /// A peer that reads a few KiB now and then does not end a wait: past the patience
    /// with less than `MIN_PROGRESS` taken, the write fails. Enough taken ends the wait, as
    /// does a write that goes through without waiting; the next wait has its whole patience.
    #[tokio::test(start_paused = true)]
    async fn a_trickle_does_not_end_a_wait_and_enough_does() {
        let patience = Duration::from_secs(30);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut stall = Stall::new(patience);
        assert!(stall.wait::<()>(&mut cx, "slow").is_pending());
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(9)).await;
            stall.wrote(4096);
            assert!(stall.wait::<()>(&mut cx, "slow").is_pending());
        }
        tokio::time::advance(Duration::from_secs(4)).await;
        assert!(timed_out(stall.wait(&mut cx, "slow")), "12 KiB in 31 s");

        let mut stall = Stall::new(patience);
        assert!(stall.wait::<()>(&mut cx, "slow").is_pending());
        tokio::time::advance(Duration::from_secs(25)).await;
        stall.wrote(MIN_PROGRESS);
        assert!(stall.wait::<()>(&mut cx, "slow").is_pending());
        tokio::time::advance(Duration::from_secs(25)).await;
        assert!(
            stall.wait::<()>(&mut cx, "slow").is_pending(),
            "a new wait, with its whole patience"
        );

        let mut stall = Stall::new(patience);
        assert!(stall.wait::<()>(&mut cx, "slow").is_pending());
        tokio::time::advance(Duration::from_secs(25)).await;
        stall.wrote(100);
        stall.wrote(100);
        assert!(stall.wait::<()>(&mut cx, "slow").is_pending());
        tokio::time::advance(Duration::from_secs(25)).await;
        assert!(
            stall.wait::<()>(&mut cx, "slow").is_pending(),
            "a write that did not wait ended the last wait"
        );
    }
}
