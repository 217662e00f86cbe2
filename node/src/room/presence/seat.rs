//! A person's seat on the presence board: their latest state, encoded once,
//! and the credit that pays for announcing it to everyone else.

use std::time::Instant;

use serde::Serialize;

use crate::ids::PersonId;
use crate::outbox::{ConnId, Outbox};

use super::{CATCH_UP_BURST, CATCH_UP_PER_SECOND, RELAY_BURST, RELAY_PER_BYTE, RELAY_PER_SECOND};

/// A person's relay credit, in bytes of entry.
#[derive(Clone, Copy)]
pub(super) struct Credit {
    bytes: f64,
    at: Instant,
    /// Bytes earned a second, and the most it holds.
    per_second: f64,
    burst: f64,
}

impl Credit {
    /// The credit that pays for announcing a person's own entry to everyone else.
    pub(super) fn new(now: Instant) -> Self {
        Self::of(RELAY_PER_SECOND, RELAY_BURST, now)
    }

    /// The credit that pays for what a person is sent when they move to a page: the
    /// entries of everyone on it.
    pub(super) fn for_catch_up(now: Instant) -> Self {
        Self::of(CATCH_UP_PER_SECOND, CATCH_UP_BURST, now)
    }

    fn of(per_second: f64, burst: f64, now: Instant) -> Self {
        Self {
            bytes: burst,
            at: now,
            per_second,
            burst,
        }
    }

    pub(super) fn earn(&mut self, wire_bytes: usize, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        self.bytes = (self.bytes + elapsed * self.per_second + wire_bytes as f64 * RELAY_PER_BYTE)
            .min(self.burst);
    }

    /// Whether it holds all it may: no different from a new one.
    pub(super) fn is_full(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.bytes + elapsed * self.per_second >= self.burst
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
    /// The client address of the socket: what it is sent when it moves page is paid from
    /// that address's catch-up credit in this room (`Board::catch_up_credits`).
    pub(super) address: Option<std::net::IpAddr>,
    pub(super) full: String,
    pub(super) short: String,
    /// A change waits for credit: announced at a later tick.
    pub(super) deferred: Option<bool>,
}

impl Seat {
    /// Writes the person's entries: `full` (every field) and `short` (id and page),
    /// into the seat's own buffers, which keep their room between changes.
    pub(super) fn encode(&mut self) {
        let mut full = std::mem::take(&mut self.full).into_bytes();
        full.clear();
        full.extend_from_slice(b"{\"camera\":");
        put(&mut full, &self.camera);
        full.extend_from_slice(b",\"cursor\":");
        put(&mut full, &self.cursor);
        full.extend_from_slice(b",\"id\":");
        put(&mut full, &self.person.as_str());
        full.extend_from_slice(b",\"page\":");
        put(&mut full, &self.page);
        full.extend_from_slice(b",\"sel\":");
        put(&mut full, &self.sel);
        // `t` is spliced in verbatim, as the sender wrote it.
        full.extend_from_slice(b",\"t\":");
        full.extend_from_slice(self.t.as_deref().unwrap_or("null").as_bytes());
        full.push(b'}');
        self.full = String::from_utf8(full).unwrap_or_default();
        let mut short = std::mem::take(&mut self.short).into_bytes();
        short.clear();
        short.extend_from_slice(b"{\"id\":");
        put(&mut short, &self.person.as_str());
        short.extend_from_slice(b",\"page\":");
        put(&mut short, &self.page);
        short.push(b'}');
        self.short = String::from_utf8(short).unwrap_or_default();
    }
}

/// Appends `value` as JSON, as `serde_json` writes it (escaped strings, numbers
/// in their shortest form, `null` for none). Writing plain data to a `Vec` cannot
/// fail, and what it writes is UTF-8.
fn put(out: &mut Vec<u8>, value: &impl Serialize) {
    let _ = serde_json::to_writer(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn entries_are_the_json_of_the_state() {
        let (outbox, _rx) = crate::outbox::outbox(4, 1024, crate::metrics::Metrics::new());
        let mut seat = Seat {
            outbox,
            person: PersonId::generate(),
            page: Some("p\"1".into()),
            cursor: Some([1.5, -2.0]),
            sel: Some(vec!["a".into(), "b".into()]),
            camera: None,
            t: Some("12.50".into()),
            changed: 0,
            page_changed: 0,
            watermark: 0,
            catch_up: Vec::new(),
            address: None,
            full: String::new(),
            short: String::new(),
            deferred: None,
        };
        seat.encode();
        let id = seat.person.as_str().to_owned();
        let full: Value = serde_json::from_str(&seat.full).unwrap();
        assert_eq!(
            full,
            json!({"id": id, "page": "p\"1", "cursor": [1.5, -2.0], "sel": ["a", "b"],
                   "camera": null, "t": 12.50})
        );
        assert!(seat.full.ends_with(r#","t":12.50}"#), "{}", seat.full);
        let short: Value = serde_json::from_str(&seat.short).unwrap();
        assert_eq!(short, json!({"id": id, "page": "p\"1"}));
        // Encoding again starts afresh.
        seat.page = None;
        seat.encode();
        assert_eq!(
            serde_json::from_str::<Value>(&seat.short).unwrap(),
            json!({"id": id, "page": null})
        );
    }
}
