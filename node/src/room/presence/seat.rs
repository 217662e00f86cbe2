//! A person's seat on the presence board: their latest state, encoded once,
//! and the credit that pays for announcing it to everyone else.

use std::time::Instant;

use serde_json::json;

use crate::ids::PersonId;
use crate::outbox::{ConnId, Outbox};

use super::{RELAY_BURST, RELAY_PER_BYTE, RELAY_PER_SECOND};

/// A person's relay credit, in bytes of entry.
pub(super) struct Credit {
    bytes: f64,
    at: Instant,
}

impl Credit {
    pub(super) fn new(now: Instant) -> Self {
        Self {
            bytes: RELAY_BURST,
            at: now,
        }
    }

    pub(super) fn earn(&mut self, wire_bytes: usize, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        self.bytes = (self.bytes + elapsed * RELAY_PER_SECOND + wire_bytes as f64 * RELAY_PER_BYTE)
            .min(RELAY_BURST);
    }

    pub(super) fn pay(&mut self, bytes: usize, now: Instant) -> bool {
        self.earn(0, now);
        let ok = self.bytes >= bytes as f64;
        if ok {
            self.bytes -= bytes as f64;
        }
        ok
    }
}

pub(super) struct Seat {
    pub(super) outbox: Outbox,
    pub(super) person: PersonId,
    pub(super) page: Option<String>,
    pub(super) cursor: Option<[f64; 2]>,
    pub(super) sel: Option<Vec<String>>,
    pub(super) camera: Option<[f64; 3]>,
    pub(super) t: Option<String>,
    /// The counter at this person's last change, and at its last page change.
    pub(super) changed: u64,
    pub(super) page_changed: u64,
    /// Every change at or below this has been sent to this person (if it concerned them).
    pub(super) watermark: u64,
    /// People on this person's page it must get in full, whatever the watermark.
    pub(super) catch_up: Vec<ConnId>,
    pub(super) full: String,
    pub(super) short: String,
    pub(super) credit: Credit,
    /// A change waits for credit: announced at a later tick.
    pub(super) deferred: Option<bool>,
}

impl Seat {
    pub(super) fn encode(&mut self) {
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
