//! A tick of presence: every receiver served, a slice at a time, with one
//! `presences` message of what changed above its watermark.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::metrics::Metrics;
use crate::outbox::{shared, ConnId, Msg};
use crate::ws::Outgoing;

use super::seat::Credit;
use super::{Board, MAX_PEOPLE, SLICE};

impl Board {
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
        self.catch_up_credits.retain(|_, c| !c.is_full(now));
        self.relay_credits.retain(|_, c| !c.is_full(now));
    }

    /// Serves the next slice of the round.
    pub fn serve_slice(&mut self, now: Instant, metrics: &Metrics) {
        let mut sent = 0u64;
        for _ in 0..SLICE {
            let Some(conn) = self.round.pop_front() else {
                break;
            };
            // A receiver that is not taking what it was sent gets nothing this tick: its
            // watermark stays, so once it reads again one message brings every change
            // since, at its latest, instead of a queue of stale ones growing in memory.
            if let Some(seat) = self.seats.get(&conn).filter(|s| s.outbox.is_behind()) {
                // Another tick only if something waits for it (a later change asks anyway).
                if seat.watermark < self.counter || !seat.catch_up.is_empty() {
                    self.dirty = true;
                }
                continue;
            }
            if let Some(frame) = self.message_for(conn, now) {
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
    fn message_for(&mut self, conn: ConnId, now: Instant) -> Option<Msg> {
        let mut catch_up = std::mem::take(&mut self.seats.get_mut(&conn)?.catch_up);
        let seats = &self.seats;
        let me = seats.get(&conn)?;
        let (page, watermark) = (&me.page, me.watermark);
        let address = me.address;
        let mut credit = (self.catch_up_credits.get(&address).copied())
            .unwrap_or_else(|| Credit::for_catch_up(now));
        // Who goes in, and whether in full: decided first, so the frame is written once.
        let mut included: Vec<(ConnId, bool)> = Vec::new();
        let mut len = 0;
        while included.len() < MAX_PEOPLE {
            let Some(other) = catch_up.pop() else { break };
            match seats.get(&other) {
                Some(s) if s.page == *page && s.changed > 0 => {
                    // Paid by the mover; what it cannot pay for yet comes at a later tick.
                    if !credit.pay(s.full.len(), now) {
                        catch_up.push(other);
                        break;
                    }
                    len += s.full.len() + 1;
                    included.push((other, true));
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
            if other == conn || included.iter().any(|(c, _)| *c == other) {
                continue;
            }
            let Some(s) = seats.get(&other) else {
                continue;
            };
            if s.page == *page {
                len += s.full.len() + 1;
                included.push((other, true));
            } else if s.page_changed > watermark {
                len += s.short.len() + 1;
                included.push((other, false));
            }
        }
        // Presence is never compressed: it is small, frequent, and latency-bound.
        let message = (!included.is_empty()).then(|| {
            Outgoing::written(PREFIX.len() + len + 2, |out| {
                out.extend_from_slice(PREFIX);
                for (n, (other, full)) in included.iter().enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    let s = &seats[other];
                    out.extend_from_slice(if *full { &s.full } else { &s.short }.as_bytes());
                }
                out.extend_from_slice(b"]}");
            })
        });
        let seat = self.seats.get_mut(&conn)?;
        seat.watermark = new_watermark;
        seat.catch_up = catch_up;
        self.catch_up_credits.insert(address, credit);
        if !seat.catch_up.is_empty() || new_watermark < self.counter {
            self.dirty = true;
        }
        message
    }
}

/// How every `presences` message starts.
const PREFIX: &[u8] = b"{\"type\":\"presences\",\"people\":[";
