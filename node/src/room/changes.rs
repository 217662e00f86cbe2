//! What changes around the people in a room: their counts, the presence rate
//! that follows them, and the file's settings (link, keys, name).

use std::time::{Duration, Instant};

use atrium_protocol::CloseCode;
use serde_json::json;

use super::access::{self, Access, Role};
use super::core::RoomCore;
use crate::apptoken::Level;
use crate::outbox::{shared, ConnId};
use crate::store::FileRecord;

impl RoomCore {
    /// Busy rooms tick slower; clients are told whenever the rate changes.
    pub(super) fn update_presence_rate(&mut self) {
        let config = &self.rules.config;
        let hz = if self.participants.len() > config.busy_room {
            config.busy_presence_hz
        } else {
            config.presence_hz
        };
        if hz != self.presence_hz {
            self.presence_hz = hz;
            let msg = json!({"type": "presence-rate", "hz": hz}).to_string();
            self.broadcast(shared(msg), "presence-rate");
        }
    }

    /// Publishes the room's people and editor counts (after joins, leaves, role changes).
    pub(super) fn sync_counts(&mut self) {
        self.people.store(
            self.participants.len(),
            std::sync::atomic::Ordering::Relaxed,
        );
        let editors = self
            .participants
            .values()
            .filter(|m| m.role == Role::Editor)
            .count() as i64;
        self.rules
            .metrics
            .editors
            .add(editors - self.editors_counted);
        self.editors_counted = editors;
    }

    pub fn tick_period(&self) -> Duration {
        Duration::from_micros(1_000_000 / u64::from(self.presence_hz.max(1)))
    }

    /// A refreshed app token: the socket's access follows its new grant at once (a
    /// narrowed one demotes it before its next patch); without the file in the grant it
    /// leaves with 4003. The owner stays the owner.
    pub(super) fn regrant(&mut self, conn: ConnId, grant: Option<Level>, exp: i64, now: Instant) {
        let Some(m) = self.participants.get_mut(&conn) else {
            return;
        };
        if m.access != Access::Owner {
            match grant {
                Some(level) => {
                    m.access = Access::Grant {
                        edit: level == Level::Edit,
                    }
                }
                None => {
                    m.outbox
                        .close(CloseCode::Forbidden, "the token no longer grants this file");
                    self.leave(conn, now);
                    return;
                }
            }
        }
        let outbox = m.outbox.clone();
        // Roles first: once `refreshed` arrives, the new grant is in force.
        self.settle_roles();
        outbox.send_text(json!({"type": "refreshed", "exp": exp}).to_string());
        self.rules
            .metrics
            .messages_sent
            .with_label_values(&["refreshed"])
            .inc();
    }

    pub(super) fn file_changed(&mut self, record: FileRecord, now: Instant) {
        self.record = record;
        let gone: Vec<ConnId> = self
            .participants
            .iter()
            .filter(|(_, m)| access::role(&self.record, m.access).is_err())
            .map(|(c, _)| *c)
            .collect();
        for conn in gone {
            if let Some(m) = self.participants.get(&conn) {
                m.outbox.close(CloseCode::Forbidden, "no access any more");
            }
            self.leave(conn, now);
        }
        self.settle_roles();
    }
}
