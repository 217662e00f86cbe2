//! A tick of presence: every receiver served, a slice at a time, with one
//! `presences` message of what changed above its watermark.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;

use crate::metrics::Metrics;
use crate::outbox::{shared, ConnId, Msg};
use crate::ws::Outgoing;

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
