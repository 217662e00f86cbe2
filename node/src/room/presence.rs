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
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;

use crate::ids::PersonId;
use crate::metrics::Metrics;
use crate::outbox::{shared, ConnId, Msg, Outbox};
use crate::protocol::PresenceUpdate;
use crate::ws::Outgoing;

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
/// cursor, a few selected ids) never waits.
pub const RELAY_PER_BYTE: f64 = 16.0;
pub const RELAY_PER_SECOND: f64 = 2048.0;
pub const RELAY_BURST: f64 = 16.0 * 1024.0;

/// A person's relay credit, in bytes of entry.
struct Credit {
    bytes: f64,
    at: Instant,
}

impl Credit {
    fn new(now: Instant) -> Self {
        Self {
            bytes: RELAY_BURST,
            at: now,
        }
    }

    fn earn(&mut self, wire_bytes: usize, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        self.bytes = (self.bytes + elapsed * RELAY_PER_SECOND + wire_bytes as f64 * RELAY_PER_BYTE)
            .min(RELAY_BURST);
    }

    fn pay(&mut self, bytes: usize, now: Instant) -> bool {
        self.earn(0, now);
        let ok = self.bytes >= bytes as f64;
        if ok {
            self.bytes -= bytes as f64;
        }
        ok
    }
}

struct Seat {
    outbox: Outbox,
    person: PersonId,
    page: Option<String>,
    cursor: Option<[f64; 2]>,
    sel: Option<Vec<String>>,
    camera: Option<[f64; 3]>,
    t: Option<String>,
    /// The counter at this person's last change, and at its last page change.
    changed: u64,
    page_changed: u64,
    /// Every change at or below this has been sent to this person (if it concerned them).
    watermark: u64,
    /// People on this person's page it must get in full, whatever the watermark.
    catch_up: Vec<ConnId>,
    full: String,
    short: String,
    credit: Credit,
    /// A change waits for credit: announced at a later tick.
    deferred: Option<bool>,
}

impl Seat {
    fn encode(&mut self) {
        self.full = json!({
            "id": self.person.as_str(),
            "page": self.page,
            "cursor": self.cursor,
            "sel": self.sel,
            "camera": self.camera,
        })
        .to_string();
        // `t` is spliced in verbatim, as the sender wrote it.
        self.full.pop();
        self.full.push_str(",\"t\":");
        self.full.push_str(self.t.as_deref().unwrap_or("null"));
        self.full.push('}');
        self.short = json!({"id": self.person.as_str(), "page": self.page}).to_string();
    }
}

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
        if !seat.credit.pay(seat.full.len(), now) {
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

    /// Seats a person; `page` carries over from a socket it replaces.
    pub fn join(
        &mut self,
        conn: ConnId,
        outbox: Outbox,
        person: PersonId,
        page: Option<String>,
        now: Instant,
    ) {
        let mut seat = Seat {
            outbox,
            person,
            page,
            cursor: None,
            sel: None,
            camera: None,
            t: None,
            changed: 0,
            page_changed: 0,
            watermark: self.counter,
            catch_up: Vec::new(),
            full: String::new(),
            short: String::new(),
            credit: Credit::new(now),
            deferred: None,
        };
        seat.catch_up = self.on_page(seat.page.as_deref(), conn);
        self.seats.insert(conn, seat);
        self.bump(conn, true, now);
    }

    /// Removes a seat; `announce` false when the same person carries on elsewhere.
    pub fn leave(&mut self, conn: ConnId, announce: bool, now: Instant) -> Option<Option<String>> {
        let seat = self.seats.remove(&conn)?;
        self.changes.remove(&seat.changed);
        if announce {
            self.leaving.push(seat.person);
            self.leaving_since.get_or_insert(now);
            self.dirty = true;
        }
        Some(seat.page)
    }

    fn on_page(&self, page: Option<&str>, except: ConnId) -> Vec<ConnId> {
        self.seats
            .iter()
            .filter(|(c, s)| **c != except && s.page.as_deref() == page)
            .map(|(c, _)| *c)
            .collect()
    }

    /// Applies a person's update; fields left out keep their values.
    pub fn update(&mut self, conn: ConnId, update: PresenceUpdate, now: Instant) {
        let Some(seat) = self.seats.get_mut(&conn) else {
            return;
        };
        let mut page_moved = false;
        if let Some(page) = update.page {
            page_moved = page != seat.page;
            seat.page = page;
        }
        if let Some(cursor) = update.cursor {
            seat.cursor = cursor;
        }
        if let Some(sel) = update.sel {
            seat.sel = sel;
        }
        if let Some(camera) = update.camera {
            seat.camera = camera;
        }
        if update.t.is_some() {
            seat.t = update.t;
        }
        seat.credit.earn(update.wire_bytes, now);
        if page_moved {
            let page = seat.page.clone();
            let catch_up = self.on_page(page.as_deref(), conn);
            if let Some(seat) = self.seats.get_mut(&conn) {
                seat.catch_up = catch_up;
            }
        }
        self.bump(conn, page_moved, now);
    }

    /// Whether a tick has anything to send.
    pub fn wants_tick(&self) -> bool {
        self.dirty && self.round.is_empty()
    }

    pub fn in_round(&self) -> bool {
        !self.round.is_empty()
    }

    /// Starts a tick: announces leavers who left at least `grace` ago, then
    /// queues every receiver.
    pub fn start_round(&mut self, grace: Duration, now: Instant, metrics: &Metrics) {
        self.dirty = false;
        self.announce_deferred(now);
        let due = self
            .leaving_since
            .is_some_and(|t| now.saturating_duration_since(t) >= grace);
        if !self.leaving.is_empty() && !due {
            self.dirty = true;
        }
        if !self.leaving.is_empty() && due {
            self.leaving_since = None;
            let ids: Vec<&str> = self.leaving.iter().map(|p| p.as_str()).collect();
            let leave = shared(json!({"type": "leave", "ids": ids}).to_string());
            for seat in self.seats.values() {
                seat.outbox.send(leave.clone());
            }
            metrics
                .messages_sent
                .with_label_values(&["leave"])
                .inc_by(self.seats.len() as u64);
            self.leaving.clear();
        }
        self.round.extend(self.seats.keys().copied());
        self.round_started = Some(now);
    }

    /// Serves the next slice of the round.
    pub fn serve_slice(&mut self, now: Instant, metrics: &Metrics) {
        let mut sent = 0u64;
        for _ in 0..SLICE {
            let Some(conn) = self.round.pop_front() else {
                break;
            };
            if let Some(frame) = self.message_for(conn) {
                if let Some(seat) = self.seats.get(&conn) {
                    seat.outbox.send(frame);
                    sent += 1;
                }
            }
        }
        metrics
            .messages_sent
            .with_label_values(&["presences"])
            .inc_by(sent);
        if self.round.is_empty() {
            if let Some(started) = self.round_started.take() {
                metrics
                    .presence_tick_seconds
                    .observe(now.saturating_duration_since(started).as_secs_f64());
            }
        }
    }

    /// One receiver's message for this tick, advancing its watermark.
    fn message_for(&mut self, conn: ConnId) -> Option<Msg> {
        let seat = self.seats.get(&conn)?;
        let page = seat.page.clone();
        let watermark = seat.watermark;
        let mut catch_up = std::mem::take(&mut self.seats.get_mut(&conn)?.catch_up);
        let mut included: Vec<ConnId> = Vec::new();
        let mut body = String::from("{\"type\":\"presences\",\"people\":[");
        let push = |body: &mut String, entry: &str| {
            if body.ends_with('}') {
                body.push(',');
            }
            body.push_str(entry);
        };
        while included.len() < MAX_PEOPLE {
            let Some(other) = catch_up.pop() else { break };
            match self.seats.get(&other) {
                Some(s) if s.page == page && s.changed > 0 => {
                    push(&mut body, &s.full);
                    included.push(other);
                }
                _ => {}
            }
        }
        let mut new_watermark = self.counter;
        for (&at, &other) in self.changes.range(watermark + 1..) {
            if included.len() >= MAX_PEOPLE {
                new_watermark = at - 1;
                break;
            }
            if other == conn || included.contains(&other) {
                continue;
            }
            let Some(s) = self.seats.get(&other) else {
                continue;
            };
            if s.page == page {
                push(&mut body, &s.full);
                included.push(other);
            } else if s.page_changed > watermark {
                push(&mut body, &s.short);
                included.push(other);
            }
        }
        let seat = self.seats.get_mut(&conn)?;
        seat.watermark = new_watermark;
        seat.catch_up = catch_up;
        if !seat.catch_up.is_empty() || new_watermark < self.counter {
            self.dirty = true;
        }
        if included.is_empty() {
            return None;
        }
        body.push_str("]}");
        // Presence is never compressed: it is small, frequent, and latency-bound.
        Some(Outgoing::new(Bytes::from(body), false))
    }
}
