//! Writing to the socket from the sender's own task.
//!
//! Handing a message to the socket's writer costs a channel push, a wake-up of
//! the writer's task and a poll of it, per message. When nothing is queued and
//! the writer has nothing in hand, the sender (a room, mostly) writes the frame
//! itself with a non-blocking write instead. Whatever the socket does not take
//! at once is queued, and the writer (which may wait for the socket) sends it.
//! The room still never waits for a socket.
//!
//! Order is kept by [`Line::busy`], changed only with the line locked: a sender
//! that queues sets it, and the writer clears it only once the queue is empty and
//! what it took is written. While it is set, every sender queues.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use tokio::net::tcp::OwnedWriteHalf;

use super::{Out, Outbox, OutboxReceiver, Queued};

/// The socket as senders share it.
#[derive(Default)]
pub struct Line {
    /// The socket's sending half; none until attached, and none for connections
    /// that are not plain TCP (they always go through the writer).
    socket: Option<Arc<OwnedWriteHalf>>,
    /// Whether the socket agreed to permessage-deflate.
    deflate: bool,
    /// The writer has something to write (or is writing): senders must queue.
    pub(super) busy: bool,
}

impl Outbox {
    /// Lets senders write to `socket` themselves from now on.
    pub fn attach(&self, socket: Arc<OwnedWriteHalf>, deflate: bool) {
        let mut line = self.shared.line.lock().unwrap_or_else(|p| p.into_inner());
        line.socket = Some(socket);
        line.deflate = deflate;
    }

    /// Has the kernel acknowledge what the socket received at once rather than after its
    /// delayed-ACK timer (40 ms or more on Linux). Called for a pong, which the node answers
    /// with nothing: a client with Nagle's algorithm on (`TCP_NODELAY` unset, the default
    /// of several WebSocket libraries) holds its next message until the pong is
    /// acknowledged, so an edit sent just after one waited up to 40 ms. One system call a
    /// pong, and pongs are paced with pings (`ws::reader::CONTROL_PER_SECOND`); a failure
    /// only leaves the kernel's own timing.
    pub fn ack_now(&self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let line = self.shared.line.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(socket) = &line.socket {
                let stream: &tokio::net::TcpStream = socket.as_ref().as_ref();
                let _ = socket2::SockRef::from(stream).set_tcp_quickack(true);
            }
        }
    }

    /// Writes `out` at once if the socket takes it, else queues it (or what is
    /// left of it). Its `len` bytes are counted in the queue already.
    pub(super) fn write_or_push(&self, out: Out, len: usize) -> bool {
        let mut line = self.shared.line.lock().unwrap_or_else(|p| p.into_inner());
        // Items the writer has not taken yet count as queued too.
        let queued = self.frames.capacity() != self.frames.max_capacity();
        let free = !line.busy && !queued && !self.is_closing();
        let frame = match &out {
            _ if !free => None,
            Out::Message(m) => m.frame_if_ready(line.deflate),
            // Written in pieces, by the writer (only welcomes are spliced; they are queued).
            Out::Spliced(_) => None,
            Out::Control(b) | Out::Rest(b) => Some(b.clone()),
        };
        let (Some(frame), Some(socket)) = (frame, line.socket.as_ref()) else {
            return self.push_locked(&mut line, Queued::new(out, None), len);
        };
        // The message leaves the queue's account whatever the write does.
        self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
        let written = match socket.try_write(&frame) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
            // A broken socket: its reader finds out and ends it; this message is moot.
            Err(_) => return true,
        };
        self.shared.metrics.bytes_sent.inc_by(written as u64);
        if written == frame.len() {
            return true;
        }
        if written == 0 {
            // Nothing of it went: it is queued as it came (and dropped with the queue
            // after an overflow), not as the rest of a frame begun.
            self.shared.bytes.fetch_add(len, Ordering::AcqRel);
            return self.push_locked(&mut line, Queued::new(out, None), len);
        }
        // The rest of a frame goes first, before anything sent after it. It is queued
        // whatever the queue's bound (it was counted as part of its message): without it
        // the peer would be left in the middle of a frame, and its close frame after an
        // overflow read as that frame's payload.
        let rest: Bytes = frame.slice(written..);
        let rest_len = rest.len();
        self.shared.bytes.fetch_add(rest_len, Ordering::AcqRel);
        self.push_locked(&mut line, Queued::new(Out::Rest(rest), None), rest_len)
    }
}

impl OutboxReceiver {
    /// The writer is about to write something of its own (a ping): senders queue.
    pub fn claim(&self) {
        let shared = &self.close.0;
        shared.line.lock().unwrap_or_else(|p| p.into_inner()).busy = true;
    }

    /// Whether anything waits in the queue (after [`Self::claim`], everything a sender
    /// began is there).
    pub fn has_queued(&self) -> bool {
        !self.frames.is_empty()
    }

    /// The writer wrote all it had: once nothing is queued either, senders may
    /// write themselves again.
    pub fn done_writing(&mut self) {
        self.written();
        let shared = &self.close.0;
        let mut line = shared.line.lock().unwrap_or_else(|p| p.into_inner());
        if self.frames.is_empty() {
            line.busy = false;
        }
    }

    /// The socket is no longer the senders' to write (the writer is ending).
    pub fn detach(&self) {
        let shared = &self.close.0;
        let mut line = shared.line.lock().unwrap_or_else(|p| p.into_inner());
        line.socket = None;
        line.busy = true;
    }
}
