//! Presence: where everyone in a room is and what they point at, sent on a tick.
//!
//! Each person's latest state is kept once, with two numbers from a room-wide
//! change counter: when it last changed at all, and when its page last changed.
//! Each receiver has a watermark: every change at or below it that concerns the
//! receiver has been sent. On a tick, a receiver gets one `presences` message with
//! the people whose change lies above its watermark, oldest change first, at most
//! [`MAX_PEOPLE`]: full state for people on its page, `{"id","page"}` for a page
//! change elsewhere, never its own. Someone who joins or changes page is first
//! caught up on everyone already on that page.
//!
//! A tick's messages are built in slices of [`SLICE`] receivers, with the room free
//! to handle patches between slices, so edits never wait behind a round of presence.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;

use crate::ids::PersonId;
use crate::outbox::ConnId;

mod changes;
mod round;
mod seat;

use seat::{Credit, Seat};

/// Most people in one `presences` message.
pub const MAX_PEOPLE: usize = 60;
/// Receivers served before the room looks at its commands again.
pub const SLICE: usize = 64;

/// What one person's presence may cost everyone else. A person's entry goes out
/// whole on every change (the contract's full state), so a large state (a long
/// selection) followed by tiny cursor moves would be an amplifier: every byte of
/// each entry announced is paid from a credit earned by the person's own messages
/// ([`RELAY_PER_BYTE`] per byte received on the wire) and by time
/// ([`RELAY_PER_SECOND`]), holding at most [`RELAY_BURST`]. A change it cannot pay
/// for waits for the credit, keeping its latest state; everyday presence (a
/// cursor, a few selected ids) never waits. The credit is the client address's in the
/// room, shared by its sockets: more sockets, or joining again, earn no more by time
/// (the twelfth review: a hundred sockets of one address each started with a full one).
pub const RELAY_PER_BYTE: f64 = 16.0;
pub const RELAY_PER_SECOND: f64 = 2048.0;
pub const RELAY_BURST: f64 = 16.0 * 1024.0;

/// What moving to a page (or joining) may draw: the entries of everyone on it, in full,
/// paid from a credit of the mover's address that earns this much a second and holds at
/// most the burst (room for 60 of the largest states at once). A person flipping pages as fast as it may would
/// otherwise be sent the whole page's state on every flip, paid for by nobody.
pub const CATCH_UP_PER_SECOND: f64 = 32.0 * 1024.0;
pub const CATCH_UP_BURST: f64 = 512.0 * 1024.0;

#[derive(Default)]
pub struct Board {
    seats: HashMap<ConnId, Seat>,
    /// Latest change of each person, by counter.
    changes: BTreeMap<u64, ConnId>,
    counter: u64,
    /// People who left since the last tick: announced in one `leave`.
    leaving: Vec<PersonId>,
    /// When the first of them left: leaves wait a tick, so people dropped
    /// together are announced together and a quick reconnect is never seen.
    leaving_since: Option<Instant>,
    /// Receivers still to be served in the current tick.
    round: VecDeque<ConnId>,
    /// Something happened since the last round.
    dirty: bool,
    /// When the current round started (for the tick duration metric).
    round_started: Option<Instant>,
    /// What each client address may still draw by moving page (see [`CATCH_UP_BURST`]),
    /// shared by its sockets in this room, so neither more sockets nor joining again and
    /// again earns more; those back to full are forgotten at the next tick.
    catch_up_credits: HashMap<Option<std::net::IpAddr>, seat::Credit>,
    /// What each client address's people may still announce of their own entries (see
    /// [`RELAY_PER_BYTE`]), shared by its sockets in this room; those back to full are
    /// forgotten at the next tick.
    relay_credits: HashMap<Option<std::net::IpAddr>, seat::Credit>,
}

impl Board {
    pub fn page_of(&self, conn: ConnId) -> Option<&str> {
        self.seats.get(&conn).and_then(|s| s.page.as_deref())
    }

    /// Takes back a leave not yet announced; true if there was one (the person
    /// reconnected within a tick, so nobody needs to hear of it).
    pub fn cancel_leave(&mut self, person: &PersonId) -> bool {
        let before = self.leaving.len();
        self.leaving.retain(|p| p != person);
        if self.leaving.is_empty() {
            self.leaving_since = None;
        }
        self.leaving.len() != before
    }

    /// Announces a person's change, if its credit pays for the entry; else the
    /// change waits (see [`RELAY_PER_BYTE`]).
    fn bump(&mut self, conn: ConnId, page_too: bool, now: Instant) {
        let Some(seat) = self.seats.get_mut(&conn) else {
            return;
        };
        seat.encode();
        let page_too = page_too || seat.deferred == Some(true);
        let credit = self.relay_credits.entry(seat.address);
        if !credit
            .or_insert_with(|| Credit::new(now))
            .pay(seat.full.len(), now)
        {
            seat.deferred = Some(page_too);
            self.dirty = true;
            return;
        }
        seat.deferred = None;
        self.counter += 1;
        let counter = self.counter;
        self.changes.remove(&seat.changed);
        seat.changed = counter;
        if page_too {
            seat.page_changed = counter;
        }
        self.changes.insert(counter, conn);
        self.dirty = true;
    }

    /// Announces the changes that waited for credit and can now be paid for.
    fn announce_deferred(&mut self, now: Instant) {
        let waiting: Vec<(ConnId, bool)> = self
            .seats
            .iter()
            .filter_map(|(c, s)| s.deferred.map(|page| (*c, page)))
            .collect();
        for (conn, page) in waiting {
            self.bump(conn, page, now);
        }
    }

    fn on_page(&self, page: Option<&str>, except: ConnId) -> Vec<ConnId> {
        self.seats
            .iter()
            .filter(|(c, s)| **c != except && s.page.as_deref() == page)
            .map(|(c, _)| *c)
            .collect()
    }
}
