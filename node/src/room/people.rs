//! People in a room: joining (access, seats, the welcome), leaving, the
//! presence rate, and what a change of the file's settings does to them.

use atrium_protocol::CloseCode;
use std::time::{Duration, Instant};

use serde_json::json;

use super::access::{self, Role};
use super::core::{Exit, RoomCore};
use super::participant::{ClientState, Participant};
use super::pending::Pending;
use super::{JoinError, JoinRequest, Joined};
use crate::ids::{ClientKey, PersonId};
use crate::outbox::{shared, ConnId};
use crate::store::FileRecord;

/// Documents from this size on are reserved from the memory budget before a
/// welcome carries them.
const LARGE_WELCOME: usize = 1 << 20;

impl RoomCore {
    pub(super) fn join(&mut self, req: JoinRequest, now: Instant) -> Result<Joined, JoinError> {
        if let Some(f) = &self.finishing {
            let code = if matches!(f.exit, Exit::Moved) {
                CloseCode::Moved
            } else {
                CloseCode::ServiceRestart
            };
            return Err(JoinError::Unavailable(code));
        }
        let account_id = req.account.as_ref().map(|(id, _)| id);
        let access = access::access(&self.record, account_id, req.key.as_deref())
            .map_err(JoinError::Denied)?;
        let (allowed, mut reason) =
            access::role(&self.record, access).map_err(JoinError::Denied)?;
        self.reserve_welcome()?;

        let state = self
            .clients
            .entry(req.client)
            .or_insert_with(|| ClientState {
                person: PersonId::generate(),
                highest_op: 0,
            });
        state.highest_op = state.highest_op.max(req.stored_op);
        let person = state.person.clone();

        // A newer hello of the same client replaces the older socket, quietly: for
        // everyone else the person never left.
        let replaced: Vec<ConnId> = self
            .participants
            .iter()
            .filter(|(_, m)| m.client == req.client)
            .map(|(c, _)| *c)
            .collect();
        if replaced.is_empty() && self.participants.len() >= self.rules.config.room_people {
            return Err(JoinError::Full);
        }
        let mut page = None;
        for conn in &replaced {
            if let Some(old) = self.participants.remove(conn) {
                old.outbox.close(
                    CloseCode::Replaced,
                    "replaced by a newer socket of the same client",
                );
                page = self.board.leave(*conn, false, now).flatten();
                self.waiting.retain(|c| c != conn);
                self.rules.metrics.people.dec();
            }
        }
        let conn = req.outbox.id;
        let (role, full) = self.seat(conn, allowed, access);
        reason = reason.or(full);

        let name = match &req.account {
            Some((_, name)) => name.clone(),
            None => req
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "Guest".into()),
        };
        let member = Participant {
            outbox: req.outbox.clone(),
            person: person.clone(),
            client: req.client,
            name,
            account: req.account.map(|(id, _)| id),
            role,
            seat: req.seat.clone(),
            access,
            from_version: self.version,
        };
        member.seat.set(role, full.is_some());
        let returning = self.board.cancel_leave(&person);
        if replaced.is_empty() && !returning {
            let join = json!({"type": "join", "people": [member.person_json(page.as_deref())]});
            self.broadcast(shared(join.to_string()), "join");
        }
        self.board
            .join(conn, req.outbox.clone(), person.clone(), page, now);
        // Whatever the room sends this person before its welcome waits behind it.
        req.outbox.hold();
        self.participants.insert(conn, member);
        self.rules.metrics.people.inc();
        self.sync_counts();
        self.update_presence_rate();
        self.idle_since = None;

        let welcome = self.welcome(conn, role, reason, req.since, req.client);
        self.after_durable(Pending::Welcome {
            v: self.version,
            to: conn,
            frame: shared(welcome),
        });
        Ok(Joined { person, role })
    }

    /// A welcome carrying a large document is built in memory (twice, while it is
    /// spliced): promised from the node's memory budget first, or refused with 1013.
    fn reserve_welcome(&self) -> Result<(), JoinError> {
        let size = self.doc.serialized_len();
        if size < LARGE_WELCOME {
            return Ok(());
        }
        let Some(reservation) = self.rules.memory.reserve(2 * size as u64) else {
            self.rules.metrics.memory_refusals.inc();
            return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
        };
        reservation.hold_until_sampled();
        Ok(())
    }

    pub(super) fn welcome(
        &self,
        conn: ConnId,
        role: Role,
        reason: Option<&str>,
        since: Option<u64>,
        client: ClientKey,
    ) -> String {
        let me = &self.participants[&conn];
        let people: Vec<serde_json::Value> = self
            .participants
            .iter()
            .map(|(c, m)| m.person_json(self.board.page_of(*c)))
            .collect();
        let mut head = json!({
            "type": "welcome",
            "you": me.person.as_str(),
            "role": role.as_str(),
            "version": self.version,
            "people": people,
            "presence_hz": self.presence_hz,
        });
        if let Some(reason) = reason {
            head["reason"] = json!(reason);
        }
        // The document or the resume list is spliced in as already-encoded JSON.
        let mut out = head.to_string();
        out.pop();
        match since.and_then(|s| self.recent.resume(s, self.version, client)) {
            Some(resume) => {
                out.push_str(",\"resume\":[");
                for (i, frame) in resume.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(std::str::from_utf8(frame).unwrap_or("null"));
                }
                out.push_str("]}");
            }
            None => {
                out.push_str(",\"doc\":");
                out.push_str(&self.doc.to_json());
                out.push('}');
            }
        }
        out
    }

    pub(super) fn leave(&mut self, conn: ConnId, now: Instant) {
        if let Some(m) = self.participants.remove(&conn) {
            self.rules.metrics.people.dec();
            self.board.leave(conn, true, now);
            self.waiting.retain(|c| *c != conn);
            if m.role == Role::Editor {
                self.settle_roles();
            }
            self.sync_counts();
            self.update_presence_rate();
        }
        if self.participants.is_empty() {
            self.idle_since = Some(now);
        }
    }

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
