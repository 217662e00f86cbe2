//! The app's server in the room: a patch from the server API (applied like a socket's, under
//! a service person), the people in the room, removing people (kick), and broadcast events.
//!
//! A server patch is logged under a client key derived from the API key and the caller's
//! op id ([`server_client`]), so the op log and the `client_ops` table, written in the same
//! transaction as the patch, are what recognises a retry after a restart or a failover. The
//! room also keeps the latest ones in memory ([`ServerOps`]) to answer retries that arrive
//! while the first is still on its way to the disk.

use std::time::Instant;

use serde_json::{json, Value};

use atrium_protocol::CloseCode;

use super::core::RoomCore;
use super::pending::Pending;
use super::recent::RecentOp;
use crate::outbox::{shared, ConnId};
use crate::store::LoggedPatch;

pub mod requests;
pub use requests::{
    event_message, server_client, service_person, Event, KickTarget, PeopleRequest, ServerOps,
    ServerPatch, ServerPatchError, ServerPatched, SERVER_CLIENT_MARK,
};

impl RoomCore {
    pub(super) fn server_patch(&mut self, req: ServerPatch, now: Instant) {
        if self.finishing.is_some() {
            let _ = req.reply.send(Err(ServerPatchError::Unavailable));
            return;
        }
        if let Some(v) = self.server_ops.get(&req.client) {
            // A retry of one this room took: answered once its first answer is durable.
            let reply = req.reply;
            self.after_durable(Pending::Server {
                v,
                relay: None,
                reply,
                done: ServerPatched { v, replayed: true },
            });
            return;
        }
        if !self.rules.memory.admits_patch(req.ops_json.len()) {
            self.rules.metrics.memory_refusals.inc();
            let _ = req.reply.send(Err(ServerPatchError::Refused(
                "too-large",
                crate::memory::AT_BUDGET.into(),
            )));
            return;
        }
        if let Err(e) = self.doc.apply(&req.ops, &self.rules.limits) {
            let _ = req
                .reply
                .send(Err(ServerPatchError::Refused(e.code(), e.to_string())));
            return;
        }
        // A restore being prepared must make its ops for these nodes anew, as for a
        // socket's patch: otherwise the room took the version whole while the log and the
        // clients kept these nodes (the fifteenth review).
        self.restores.touched(&req.ops);
        self.version += 1;
        let v = self.version;
        let relay = shared(
            json!({"type": "patch", "v": v, "by": req.by, "name": req.name})
                .to_string()
                .trim_end_matches('}')
                .to_owned()
                + ",\"ops\":"
                + &req.ops_json
                + "}",
        );
        self.snapshot.logged(req.ops_json.len(), now);
        self.recent.push(RecentOp {
            v,
            client: req.client,
            op_id: req.at_ms,
            t: None,
            relay: relay.clone(),
        });
        self.unsent.push(LoggedPatch {
            version: v,
            client: req.client,
            op_id: req.at_ms,
            by: req.by.clone(),
            ops: req.ops_json,
            t: None,
        });
        self.server_ops.insert(req.client, v, self.durable);
        self.pending.push_back(Pending::Server {
            v,
            relay: Some(relay),
            reply: req.reply,
            done: ServerPatched { v, replayed: false },
        });
        self.edited(&req.name, now);
    }

    /// Everyone in the room now: id, name, account, role, page (and an app token's
    /// `sub`), one entry per person.
    pub(super) fn people_now(&self) -> Vec<Value> {
        let mut people: Vec<Value> = self
            .participants
            .iter()
            .map(|(conn, m)| m.person_json(self.board.page_of(*conn)))
            .collect();
        people.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        people
    }

    /// Closes every socket of the target with 4006 and lets the room see them leave;
    /// answers how many sockets were closed.
    pub(super) fn kick(&mut self, target: &KickTarget, reason: &str, now: Instant) -> usize {
        let gone: Vec<ConnId> = self
            .participants
            .iter()
            .filter(|(_, m)| match target {
                KickTarget::Person(p) => m.person.as_str() == p,
                KickTarget::Sub(s) => m.profile.as_ref().is_some_and(|p| &p.sub == s),
            })
            .map(|(c, _)| *c)
            .collect();
        for conn in &gone {
            if let Some(m) = self.participants.get(conn) {
                m.outbox.close(CloseCode::Kicked, reason);
            }
            self.leave(*conn, now);
        }
        if !gone.is_empty() {
            self.rules.metrics.kicks.inc_by(gone.len() as u64);
        }
        gone.len()
    }

    /// An event for everyone in the room; one from a socket goes to everyone but its
    /// sender, named by the sender's person id.
    pub(super) fn event(&mut self, event: Event, now: Instant) {
        let (from, frame) = match event {
            Event::Server(frame) => (None, frame),
            Event::Socket { conn, data } => {
                let Some(address) = self.participants.get(&conn).map(|m| m.outbox.address()) else {
                    return;
                };
                // The room's budget for sockets' events, all senders together: what the
                // events of a view key can make the node send is this times the people.
                // Charged by the whole message sent, so tiny events cannot slip past it.
                // Each address has a quarter of it of its own, so one cannot take it all.
                // Checked before the message is built: a flood that is dropped costs nothing.
                let room_owes = !self.event_bytes.debt(now).is_zero();
                let sender = self.event_senders.of(address, now);
                if room_owes || !sender.debt(now).is_zero() {
                    self.rules.metrics.events_dropped.inc();
                    return;
                }
                let person = self.participants[&conn].person.as_str();
                let message = event_message(person, None, &data);
                sender.charge(now, message.len() as f64);
                self.event_bytes.charge(now, message.len() as f64);
                let frame = shared(message);
                (Some(conn), frame)
            }
        };
        let mut sent = 0;
        for (conn, m) in &self.participants {
            if Some(*conn) != from {
                m.outbox.send(frame.clone());
                sent += 1;
            }
        }
        self.rules
            .metrics
            .messages_sent
            .with_label_values(&["event"])
            .inc_by(sent);
    }
}
