//! Queuing for a socket: messages within the queue's bounds, and the welcome
//! before everything else.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use atrium_protocol::CloseCode;
use bytes::Bytes;
use tokio::sync::mpsc;

use super::{shared, Budget, Draw, HeldCopy, Line, Msg, Out, Outbox, Queued};

/// Why a socket is closed when its large welcome cannot be queued.
const BUSY: &str = "the node is busy sending large documents; try again later";

/// Why a socket is closed when a large patch cannot be queued for it.
const CHANGED_TOO_MUCH: &str = "the file changed more than this socket can be sent now; join again";

impl Outbox {
    /// Queues one message. A full queue (in items or bytes) closes the socket
    /// with 4008; the room never waits for a socket.
    pub fn send(&self, msg: Msg) -> bool {
        self.queue(Out::Message(msg))
    }

    /// Queues a ready control frame (a pong).
    pub fn send_control(&self, frame: Bytes) -> bool {
        self.queue(Out::Control(frame))
    }

    pub fn send_text(&self, text: String) -> bool {
        self.send(shared(text))
    }

    fn queue(&self, out: Out) -> bool {
        debug_assert!(
            !matches!(out, Out::Spliced(_)),
            "a spliced message goes only as a welcome, which holds its copy"
        );
        let len = out.len();
        if !self.account(len) {
            return false;
        }
        if self.shared.held.load(Ordering::Acquire) {
            let mut gate = self.shared.gate.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(waiting) = gate.as_mut() {
                // Closing while its welcome waits, or after it was refused: nothing goes
                // out before the close.
                if self.is_closing() {
                    self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
                    return false;
                }
                waiting.push(out);
                return true;
            }
        }
        self.write_or_push(out, len)
    }

    /// Holds everything sent from now on until [`Outbox::open_with`] sends the
    /// welcome: a welcome waiting to be durable must still come first.
    pub fn hold(&self) {
        let mut gate = self.shared.gate.lock().unwrap_or_else(|p| p.into_inner());
        gate.get_or_insert_with(Vec::new);
        self.shared.held.store(true, Ordering::Release);
    }

    /// Counts what this socket draws on the node-wide [`Budget`] against `address`'s
    /// share (its limit key: an IPv6 client by its /64).
    pub fn set_address(&self, address: std::net::IpAddr) {
        let _ = self.shared.address.set(crate::limits::address_key(address));
    }

    /// The socket's writer began waiting for its peer to take bytes (kept from the first
    /// wait until [`Self::write_progressed`]).
    pub fn write_waits(&self) {
        let now = crate::clock::unix_ms() as u64;
        let since = &self.shared.write_waiting_since;
        let _ = since.compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire);
    }

    /// The socket's peer took bytes.
    pub fn write_progressed(&self) {
        let since = &self.shared.write_waiting_since;
        if since.load(Ordering::Relaxed) != 0 {
            since.store(0, Ordering::Release);
        }
    }

    /// Whether the socket's writer waits for its peer to take bytes it has in hand: what
    /// the room may leave for later (presence, which a later tick sends at its latest)
    /// should not pile up behind them.
    pub fn is_behind(&self) -> bool {
        self.shared.write_waiting_since.load(Ordering::Acquire) != 0
    }

    /// The socket's client address (its limit key), once set.
    pub fn address(&self) -> Option<std::net::IpAddr> {
        self.shared.address.get().copied()
    }

    /// Sends `first` (a welcome, possibly large), then everything held behind it. A welcome
    /// that cannot be sent (the socket closes 1013) takes what was held with it, and what
    /// comes after: nothing may reach a client before its welcome (the seventh review saw
    /// `presences` and `join` arrive ahead of such a close).
    pub fn open_with(&self, first: impl Into<Out>, budget: &Arc<Budget>) -> bool {
        let mut gate = self.shared.gate.lock().unwrap_or_else(|p| p.into_inner());
        let mut ok = self.push_welcome(first.into(), budget);
        for out in gate.take().unwrap_or_default() {
            // Already counted in `bytes` when it was held.
            let len = out.len();
            if ok {
                ok &= self.push(Queued::new(out, None), len);
            } else {
                self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
            }
        }
        if ok {
            self.shared.held.store(false, Ordering::Release);
        } else {
            // Refused for want of room it is already closing; its writer gone, it is now.
            self.close(CloseCode::TryAgainLater, "the welcome could not be queued");
            // The gate stays shut: what the room sends before it drops this socket would
            // otherwise reach the client ahead of the close (the twentieth review saw a
            // `join` before a 1013), with no welcome before it.
            *gate = Some(Vec::new());
        }
        ok
    }

    /// Queues a message that may be larger than the queue's byte cap (a restore's patch
    /// of a large version): one over half the cap draws on the node-wide `budget`, as a
    /// large welcome does, instead of overflowing the queue and closing the socket 4008.
    /// When the budget is spent, or a welcome is still waiting ahead of it, the socket is
    /// closed with 1013: its next join brings the whole document.
    pub fn send_large(&self, msg: Msg, budget: &Arc<Budget>) -> bool {
        let len = msg.payload_len();
        if len <= self.shared.max_bytes / 2 {
            return self.send(msg);
        }
        if self.shared.held.load(Ordering::Acquire) {
            self.close(CloseCode::TryAgainLater, CHANGED_TOO_MUCH);
            return false;
        }
        let msg = Out::Message(msg);
        self.push_drawn(msg, len, budget, Draw::Member, CHANGED_TOO_MUCH, None)
    }

    /// Queues a welcome, which may be bigger than the queue's byte cap (a large
    /// document): such a one draws on the node-wide budget instead, and when that
    /// is spent the socket is closed with 1013 (try again later). A welcome around a
    /// document it shares with others, charged on the budget once for all of them, holds
    /// it ([`HeldCopy`]) until written; refused (1013) when its address may hold no more.
    /// It never waits at the gate: it is what the gate waits for.
    fn push_welcome(&self, out: Out, budget: &Arc<Budget>) -> bool {
        let copy = match &out {
            Out::Spliced(s) if s.middle().is_charged() => {
                let Some(held) = budget.hold_copy(&self.shared, s.middle()) else {
                    self.close(CloseCode::TryAgainLater, BUSY);
                    return false;
                };
                Some(held)
            }
            _ => None,
        };
        let len = out.len();
        if len <= self.shared.max_bytes / 2 {
            let queued = Queued {
                out,
                budget: None,
                copy,
            };
            return self.account(len) && self.push(queued, len);
        }
        self.push_drawn(out, len, budget, Draw::Welcome, BUSY, copy)
    }

    /// Queues a large message drawn on the node-wide `budget` (against this socket's
    /// address's share); when it has no room, closes the socket with 1013 and `why`.
    fn push_drawn(
        &self,
        out: Out,
        len: usize,
        budget: &Arc<Budget>,
        kind: Draw,
        why: &str,
        copy: Option<HeldCopy>,
    ) -> bool {
        if !budget.draw(&self.shared, len, kind) {
            self.close(CloseCode::TryAgainLater, why);
            return false;
        }
        let queued = Queued {
            out,
            budget: Some(budget.clone()),
            copy,
        };
        self.push(queued, len)
    }

    /// Counts `len` more bytes in the queue; over its cap, the socket overflows.
    pub(super) fn account(&self, len: usize) -> bool {
        let queued = self.shared.bytes.fetch_add(len, Ordering::AcqRel) + len;
        if queued > self.shared.max_bytes {
            self.shared.bytes.fetch_sub(len, Ordering::AcqRel);
            self.overflow();
            return false;
        }
        true
    }

    /// Hands an accounted item to the channel, undoing the account if it fails.
    fn push(&self, queued: Queued, len: usize) -> bool {
        let mut line = self.shared.line.lock().unwrap_or_else(|p| p.into_inner());
        self.push_locked(&mut line, queued, len)
    }

    /// [`Outbox::push`] with the line held: the writer is told it has work.
    pub(super) fn push_locked(&self, line: &mut Line, queued: Queued, len: usize) -> bool {
        line.busy = true;
        match self.frames.try_send(queued) {
            Ok(()) => true,
            Err(e) => {
                let full = matches!(e, mpsc::error::TrySendError::Full(_));
                e.into_inner().give_back(&self.shared, len);
                if full {
                    self.overflow();
                }
                false
            }
        }
    }
}
