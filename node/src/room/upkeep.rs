//! The core's duties driven by time rather than by people: snapshots due,
//! store stalls, idleness, presence ticks, and closing everyone as it ends.

use std::time::Instant;

use atrium_protocol::CloseCode;

use std::time::Duration;

use super::core::{RoomCore, STALL_CLOSE, STALL_NOTICE};
use super::exit::Exit;
use crate::outbox::shared;
use crate::protocol;

/// How long a room nobody is in stays while the node's memory is pressed, or its share
/// of memory is wanted for another room (instead of `ATRIUM_ROOM_IDLE_MS`): long enough
/// for someone who reloads the page to find it open.
pub const PRESSED_IDLE: Duration = Duration::from_secs(5);

impl RoomCore {
    /// Once a second: snapshots due by time, store stalls, and idleness. `share_wanted`:
    /// a room was refused lately for the share of memory this room counts against.
    pub fn housekeeping(&mut self, now: Instant, share_wanted: bool) -> Option<Exit> {
        self.maybe_snapshot(now);
        self.maybe_checkpoint(now);
        self.check_store_stall(now);
        // Near the memory mark, or at the share, rooms nobody is in leave early, so rooms
        // opened and left (the sixth review: a free account's 34 uploads, each opened once;
        // the seventh: an owner's own files) do not keep people out of their own files
        // until their idle time is up.
        let idle_time = match share_wanted || self.rules.memory.pressed() {
            true => PRESSED_IDLE.min(self.rules.config.room_idle()),
            false => self.rules.config.room_idle(),
        };
        let idle = self
            .idle_since
            .is_some_and(|since| now.saturating_duration_since(since) >= idle_time);
        (idle
            && self.saved()
            && self.participants.is_empty()
            && !self.snapshot.in_flight()
            && self.restores.is_idle())
        .then_some(Exit::Idle)
    }

    /// Everything accepted is durable and delivered.
    fn saved(&self) -> bool {
        self.pending.is_empty() && self.in_flight.is_empty() && self.unsent.is_empty()
    }

    /// While the store cannot make patches durable, they wait (unacked): after
    /// [`STALL_NOTICE`] everyone hears a 503 notice; after [`STALL_CLOSE`] sockets
    /// close with 1013, so clients back off and resend what is unconfirmed. The
    /// journal keeps retrying; nothing accepted is dropped.
    fn check_store_stall(&mut self, now: Instant) {
        let Some(&(_, since, _)) = self.in_flight.front() else {
            self.stall.clear(now);
            return;
        };
        let waited = self.stall.waited(since, now);
        if waited >= STALL_CLOSE {
            for m in self.participants.values() {
                m.outbox.close(
                    CloseCode::TryAgainLater,
                    "the node cannot save edits right now; try again later",
                );
            }
        } else if waited >= STALL_NOTICE && !self.stall.noticed {
            self.stall.noticed = true;
            let notice = protocol::notice(
                503,
                "saving is delayed: your edits wait and will be applied in order",
            );
            self.broadcast(shared(notice), "notice");
        }
    }

    /// A finishing room ends once everything accepted is durable and delivered.
    pub fn maybe_finish(&self) -> Option<Exit> {
        self.finishing
            .as_ref()
            .filter(|_| self.saved())
            .map(|f| f.exit)
    }

    /// The presence tick: starts a round when one is due.
    pub fn presence_tick(&mut self, now: Instant) {
        let period = self.tick_period();
        self.board.start_round(period, now, &self.rules.metrics);
    }

    /// Serves the next slice of a presence round.
    pub fn serve_presence_slice(&mut self, now: Instant) {
        self.board.serve_slice(now, &self.rules.metrics);
    }

    /// The room has ended with `exit`: everyone still in it is told, counts drop
    /// to zero, and whoever waited for the end hears of it.
    pub fn close_everyone(&mut self, exit: Exit) {
        self.rules
            .metrics
            .people
            .sub(self.participants.len() as i64);
        if let Some((code, reason)) = exit.close() {
            for m in self.participants.values() {
                m.outbox.close(code, reason);
            }
        }
        self.participants.clear();
        self.sync_counts();
        if let Some(reply) = self.finishing.take().and_then(|f| f.reply) {
            let _ = reply.send(());
        }
    }
}
