//! The tunnel: once a node has switched protocols, a socket's bytes go straight from one TCP
//! connection to the other, in both directions, from one task.
//!
//! pingora would proxy them chunk by chunk through two tasks, a task pipe and its body filters;
//! the tunnel reads whatever a socket holds (up to 64 KiB at once, into a buffer shared by the
//! thread) and writes it to the other at once, so a message costs a read and a write. It keeps
//! bytes of its own only while a writer is blocked. It follows the frame headers of what the
//! node sends (`sockets::Frames`), so that when the router closes the socket (a drain) the 1012
//! close frame goes in between two of the node's frames.
//!
//! The tunnel ends when either side ends: the other side is told at once (FIN), and a client
//! gets a moment (`LINGER`) to close its side after the router's last bytes, so that closing
//! a connection it still sends on cannot reset it before it has read them.

mod pipe;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::os::fd::AsRawFd;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use nix::sys::socket::{shutdown, Shutdown};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Sleep;

use atrium_protocol::CloseCode;

use crate::sockets::{close_frame, Closing, Frames};
use pipe::Pipe;

/// The most read from a socket at once.
const SCRATCH: usize = 64 * 1024;

/// How long a client may take to close its side once the router ended the socket.
const LINGER: Duration = Duration::from_secs(1);

/// How long a drain waits for the node to finish the frame it is sending before ending the
/// socket without a close frame.
const FINISH_FRAME: Duration = Duration::from_secs(1);

thread_local! {
    static BUFFER: RefCell<Box<[u8]>> = RefCell::new(vec![0; SCRATCH].into_boxed_slice());
}

/// How a tunnel ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The node's side ended.
    Node,
    /// The client's side ended.
    Client,
    /// The router closed the socket (a drain): 1012 sent at a frame boundary.
    Closed,
    /// The router closed the socket, but the node never finished its frame: no close frame.
    ClosedMidFrame,
}

/// An upgraded socket's two connections and what was already read from the node.
pub struct Sockets {
    pub client: std::net::TcpStream,
    pub node: std::net::TcpStream,
    /// The node's bytes read past its `101`, for the client first.
    pub preread: Option<Bytes>,
    /// The node's side had already ended.
    pub node_ended: bool,
}

/// Carries a socket until one side ends or `closing` is set; `write_timeout` bounds how long a
/// write may make no progress.
pub async fn carry(
    sockets: Sockets,
    closing: Option<Arc<Closing>>,
    write_timeout: Duration,
) -> io::Result<End> {
    let mut tunnel = Tunnel::new(sockets, write_timeout)?;
    let closed = async {
        match &closing {
            Some(c) => c.wait().await,
            None => std::future::pending().await,
        }
    };
    let mut closed = pin!(closed);
    let end = poll_fn(|cx| tunnel.poll(cx, closed.as_mut())).await;
    // A client that failed or left needs no moment to close.
    tunnel
        .finish(matches!(end, Ok(e) if e != End::Client))
        .await;
    end
}

struct Tunnel {
    client: TcpStream,
    node: TcpStream,
    /// Client to node.
    up: Pipe,
    /// Node to client.
    down: Pipe,
    /// Where the node's bytes stand relative to their frames.
    frames: Frames,
    write_timeout: Duration,
    /// The router closes the socket.
    closing: bool,
    /// While closing mid-frame: how long the rest of the node's frame is awaited.
    finish_frame: Option<Pin<Box<Sleep>>>,
    /// The close frame is queued for the client.
    close_sent: bool,
}

/// The most the kernel may hold unsent on the router's side of either connection, as the
/// node's `ATRIUM_KERNEL_UNSENT_BYTES` default does on its own sockets.
const UNSENT: u32 = 128 * 1024;

/// The receive buffer of the router's side of either connection: small enough that a reader
/// who stops soon stops the writer on the far side (a client that does not read stops the
/// node, whose send queue, memory budget and closes of sockets that take nothing then apply;
/// a node that paces a client stops the client), ample for a node on the same network and a
/// socket's messages (a client 100 ms away still sends 5 MB a second).
const CLIENT_RECEIVE: usize = 256 * 1024;
const NODE_RECEIVE: usize = 64 * 1024;

/// Bounds what the kernel holds of a tunnelled socket, both ways. Left to itself, Linux grew
/// the router's buffers to megabytes a socket, outside every budget and toward the machine's
/// TCP memory limit: toward a client that never read (4.5 MiB a socket in the fifteenth
/// review) and from a client flooding pings at a node that paced it (5-8 MiB). Failing is
/// not fatal: the kernel's own sizing.
fn bound_kernel_buffers(client: &std::net::TcpStream, node: &std::net::TcpStream) {
    for (socket, receive) in [(client, CLIENT_RECEIVE), (node, NODE_RECEIVE)] {
        let socket = socket2::SockRef::from(socket);
        if let Err(e) = socket.set_tcp_notsent_lowat(UNSENT) {
            tracing::debug!(error = %e, "could not bound a tunnel's unsent bytes");
        }
        if let Err(e) = socket.set_recv_buffer_size(receive) {
            tracing::debug!(error = %e, "could not bound a tunnel's receive buffer");
        }
    }
}

impl Tunnel {
    fn new(sockets: Sockets, write_timeout: Duration) -> io::Result<Self> {
        bound_kernel_buffers(&sockets.client, &sockets.node);
        let stream = |s: std::net::TcpStream| {
            s.set_nonblocking(true)?;
            TcpStream::from_std(s)
        };
        let mut tunnel = Tunnel {
            client: stream(sockets.client)?,
            node: stream(sockets.node)?,
            up: Pipe::default(),
            down: Pipe::default(),
            frames: Frames::default(),
            write_timeout,
            closing: false,
            finish_frame: None,
            close_sent: false,
        };
        if let Some(bytes) = sockets.preread {
            tunnel.frames.advance(&bytes, false);
            tunnel.down.push(&bytes);
        }
        tunnel.down.read_done = sockets.node_ended;
        Ok(tunnel)
    }

    fn poll(
        &mut self,
        cx: &mut Context<'_>,
        closed: Pin<&mut impl Future<Output = ()>>,
    ) -> Poll<io::Result<End>> {
        if !self.closing && closed.poll(cx).is_ready() {
            self.start_closing();
        }
        while BUFFER
            .with(|b| self.poll_down(cx, &mut b.borrow_mut()))?
            .is_ready()
        {
            // The node's bytes are all out, up to a frame boundary when closing.
            if self.closing && !self.close_sent && self.frames.at_boundary() {
                self.close_sent = true;
                self.down
                    .push(&close_frame(CloseCode::ServiceRestart, "router restarting"));
                continue;
            }
            return Poll::Ready(Ok(match (self.closing, self.close_sent) {
                (false, _) => End::Node,
                (true, true) => End::Closed,
                (true, false) => End::ClosedMidFrame,
            }));
        }
        if let Some(finish) = &mut self.finish_frame {
            if finish.as_mut().poll(cx).is_ready() && !self.close_sent {
                // The node never finished its frame: no close frame can go in.
                return Poll::Ready(Ok(End::ClosedMidFrame));
            }
        }
        let timeout = self.write_timeout;
        let (client, node) = (&mut self.client, &mut self.node);
        let up = BUFFER.with(|b| {
            self.up
                .poll_move(cx, client, node, &mut b.borrow_mut(), timeout, |bytes| {
                    (bytes.len(), false)
                })
        })?;
        if up.is_ready() && !self.closing {
            return Poll::Ready(Ok(End::Client));
        }
        Poll::Pending
    }

    fn poll_down(&mut self, cx: &mut Context<'_>, scratch: &mut [u8]) -> io::Result<Poll<()>> {
        let (frames, closing) = (&mut self.frames, self.closing);
        let poll = self.down.poll_move(
            cx,
            &mut self.node,
            &mut self.client,
            scratch,
            self.write_timeout,
            |bytes| {
                let keep = frames.advance(bytes, closing);
                (keep, closing && frames.at_boundary())
            },
        );
        match poll {
            Poll::Ready(Ok(())) => Ok(Poll::Ready(())),
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Ok(Poll::Pending),
        }
    }

    /// The router closes the socket: nothing more goes to the node, and the node's bytes only
    /// up to the end of the frame it is in.
    fn start_closing(&mut self) {
        self.closing = true;
        self.up.read_done = true;
        if self.frames.at_boundary() {
            self.down.read_done = true;
        } else {
            self.finish_frame = Some(Box::pin(tokio::time::sleep(FINISH_FRAME)));
        }
    }

    /// Ends both sides, and with `linger` gives the client its moment to close.
    async fn finish(mut self, linger: bool) {
        let _ = shutdown(self.node.as_raw_fd(), Shutdown::Both);
        let _ = self.client.shutdown().await;
        if !linger {
            return;
        }
        // Whatever the client still sends is dropped, until it closes.
        let mut scratch = [0u8; 1024];
        let _ = tokio::time::timeout(LINGER, async {
            while matches!(self.client.read(&mut scratch).await, Ok(n) if n > 0) {}
        })
        .await;
    }
}
