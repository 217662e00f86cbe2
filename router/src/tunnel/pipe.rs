//! One direction of a tunnel: read what one socket has, write it to the other at once.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// One direction's state. It holds bytes only while its writer cannot take them, so an idle
/// socket costs no buffer.
#[derive(Default)]
pub struct Pipe {
    /// Bytes read (or added) but not yet written, from `start` on.
    pending: Vec<u8>,
    start: usize,
    /// Nothing more is read: the reader ended, or the tunnel stopped reading it.
    pub read_done: bool,
    /// While the writer is blocked: when it has waited too long.
    stall: Option<Pin<Box<Sleep>>>,
}

impl Pipe {
    /// Queues bytes of the tunnel's own (the preread, a close frame) after what is pending.
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// Moves bytes from `from` to `to` until neither can go on now; ready once the reader is
    /// done and everything is written. `follow` sees each read and says how much of it to pass
    /// on and whether to stop reading after that. A write that makes no progress for
    /// `timeout` fails.
    pub fn poll_move(
        &mut self,
        cx: &mut Context<'_>,
        from: &mut TcpStream,
        to: &mut TcpStream,
        scratch: &mut [u8],
        timeout: Duration,
        mut follow: impl FnMut(&[u8]) -> (usize, bool),
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.poll_flush(cx, to, timeout))?;
            if self.read_done {
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(scratch);
            match Pin::new(&mut *from).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                // A reset is an end like any other: the other side is told the same way.
                Poll::Ready(Err(_)) => self.read_done = true,
                Poll::Ready(Ok(())) if buf.filled().is_empty() => self.read_done = true,
                Poll::Ready(Ok(())) => {
                    let (keep, stop) = follow(buf.filled());
                    self.read_done = stop;
                    let data = &buf.filled()[..keep];
                    // Straight from the scratch buffer; only what the writer refuses is kept.
                    let written = match Pin::new(&mut *to).poll_write(cx, data) {
                        Poll::Ready(Ok(n)) => n,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => 0,
                    };
                    self.pending.extend_from_slice(&data[written..]);
                }
            }
        }
    }

    /// Writes what is pending; ready once nothing is.
    fn poll_flush(
        &mut self,
        cx: &mut Context<'_>,
        to: &mut TcpStream,
        timeout: Duration,
    ) -> Poll<io::Result<()>> {
        while self.start < self.pending.len() {
            match Pin::new(&mut *to).poll_write(cx, &self.pending[self.start..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.start += n;
                    if let Some(stall) = &mut self.stall {
                        stall.as_mut().reset(Instant::now() + timeout);
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return self.poll_stall(cx, timeout),
            }
        }
        if self.pending.capacity() > 0 {
            // Freed, not kept: a socket that caught up holds no buffer.
            self.pending = Vec::new();
            self.start = 0;
        }
        self.stall = None;
        Poll::Ready(Ok(()))
    }

    /// The writer is blocked: pending until it may write again, failing after `timeout`.
    fn poll_stall(&mut self, cx: &mut Context<'_>, timeout: Duration) -> Poll<io::Result<()>> {
        let stall = self
            .stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("a write made no progress for {timeout:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}
