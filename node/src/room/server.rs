//! The app's server in the room: a patch from the server API (applied like a socket's, under
//! a service person), the people in the room, removing people (kick), and broadcast events.
//!
//! A server patch is logged under a client key derived from the API key and the caller's
//! op id ([`server_client`]), so the op log and the `client_ops` table, written in the same
//! transaction as the patch, are what recognises a retry after a restart or a failover. The
//! room also keeps the latest ones in memory ([`ServerOps`]) to answer retries that arrive
//! while the first is still on its way to the disk.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use atrium_protocol::CloseCode;

use super::core::RoomCore;
use super::pending::Pending;
use super::recent::RecentOp;
use crate::doc::Op;
use crate::ids::ClientKey;
use crate::outbox::{shared, ConnId};
use crate::store::LoggedPatch;

/// The first half of every server op's client key. A real client's key is the first 16
/// bytes of a SHA-256, so it starts with these 8 bytes with a chance of 2^-64.
pub const SERVER_CLIENT_MARK: [u8; 8] = crate::store::SERVER_OP_MARK;

/// The client key a server op is logged under: the mark, then 8 bytes of the digest of
/// the API key's id and the op id. Retries are recognised per key and file.
pub fn server_client(key_id: &str, op_id: &str) -> ClientKey {
    let mut h = Sha256::new();
    h.update(b"atrium server op\0");
    h.update(key_id.as_bytes());
    h.update([0]);
    h.update(op_id.as_bytes());
    let digest = h.finalize();
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&SERVER_CLIENT_MARK);
    key[8..].copy_from_slice(&digest[..8]);
    ClientKey(key)
}

/// The `by` of a server patch: `svc-` and the API key's id (person ids never hold `-`).
pub fn service_person(key_id: &str) -> String {
    format!("svc-{key_id}")
}

/// A patch from the server API.
pub struct ServerPatch {
    pub client: ClientKey,
    /// The service person: `by` on the wire, and its display name.
    pub by: String,
    pub name: String,
    pub ops: Vec<Op>,
    pub ops_json: String,
    /// When it was accepted (Unix ms): logged as its op id, so old ones can be pruned.
    pub at_ms: u64,
    pub reply: oneshot::Sender<Result<ServerPatched, ServerPatchError>>,
    /// Its place in the room's bounded inbound queue (as a socket's patch has), given back
    /// once the room has handled it.
    pub ticket: super::registry::Ticket,
}

/// A server patch the room made durable (or had made before: `replayed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerPatched {
    pub v: u64,
    pub replayed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerPatchError {
    /// The room is closing: nothing was applied; ask again.
    Unavailable,
    /// Refused like a socket's patch, with the reject code (`invalid`, `too-large`).
    Refused(&'static str, String),
}

/// The server ops a room accepted lately, with their versions, oldest first. At most
/// `max` are kept; one is forgotten only once durable (the store answers for it then).
pub struct ServerOps {
    max: usize,
    by_client: HashMap<ClientKey, u64>,
    order: VecDeque<ClientKey>,
}

impl ServerOps {
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            by_client: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub fn get(&self, client: &ClientKey) -> Option<u64> {
        self.by_client.get(client).copied()
    }

    fn insert(&mut self, client: ClientKey, v: u64, durable: u64) {
        self.by_client.insert(client, v);
        self.order.push_back(client);
        while self.order.len() > self.max {
            let oldest = self.order[0];
            if self.by_client.get(&oldest).is_some_and(|ov| *ov > durable) {
                break;
            }
            self.order.pop_front();
            self.by_client.remove(&oldest);
        }
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// A person in the room, as the server API lists them.
pub struct PeopleRequest {
    pub reply: oneshot::Sender<Vec<Value>>,
}

/// Whom a kick removes: a person (every socket of them) or every socket of a `sub`.
#[derive(Debug, Clone)]
pub enum KickTarget {
    Person(String),
    Sub(String),
}

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
        if req.ops_json.len() > 4096 && !self.rules.memory.admits() {
            self.rules.metrics.memory_refusals.inc();
            let _ = req.reply.send(Err(ServerPatchError::Refused(
                "too-large",
                "the server is at its memory budget: only small changes are taken now".into(),
            )));
            return;
        }
        if let Err(e) = self.doc.apply(&req.ops, &self.rules.limits) {
            let _ = req
                .reply
                .send(Err(ServerPatchError::Refused(e.code(), e.to_string())));
            return;
        }
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
                let Some(m) = self.participants.get(&conn) else {
                    return;
                };
                // The room's budget for sockets' events, all senders together: what the
                // events of a view key can make the node send is this times the people.
                if !self.event_bytes.debt(now).is_zero() {
                    self.rules.metrics.events_dropped.inc();
                    return;
                }
                self.event_bytes.charge(now, data.len() as f64);
                let frame = shared(event_message(m.person.as_str(), None, &data));
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

/// A broadcast event on its way to a room.
pub enum Event {
    /// From the server API: the whole message, built by the caller.
    Server(crate::outbox::Msg),
    /// From a socket: its `data`, as compact JSON text.
    Socket { conn: ConnId, data: String },
}

/// The `event` message everyone gets: who sent it (a person id, or the service person)
/// and its payload, verbatim.
pub fn event_message(by: &str, name: Option<&str>, data: &str) -> String {
    let head = match name {
        Some(n) => json!({"type": "event", "by": by, "name": n}).to_string(),
        None => json!({"type": "event", "by": by}).to_string(),
    };
    format!("{},\"data\":{data}}}", head.trim_end_matches('}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_clients_are_marked_and_differ_by_key_and_op() {
        let a = server_client("k1", "op-1");
        assert_eq!(a.0[..8], SERVER_CLIENT_MARK);
        assert_eq!(a, server_client("k1", "op-1"));
        assert_ne!(a, server_client("k2", "op-1"));
        assert_ne!(a, server_client("k1", "op-2"));
        // A key id that runs into the op id cannot stand for another pair.
        assert_ne!(server_client("k", "1op"), server_client("k1", "op"));
    }

    #[test]
    fn server_ops_forget_only_durable_ones_beyond_the_bound() {
        let mut ops = ServerOps::new(2);
        let c = |n: u8| ClientKey([n; 16]);
        ops.insert(c(1), 1, 0);
        ops.insert(c(2), 2, 0);
        ops.insert(c(3), 3, 0);
        // Nothing is durable yet: all three kept.
        assert_eq!(ops.len(), 3);
        ops.insert(c(4), 4, 3);
        assert_eq!(ops.len(), 2);
        assert_eq!(ops.get(&c(1)), None);
        assert_eq!(ops.get(&c(4)), Some(4));
    }

    #[test]
    fn an_event_message_carries_its_payload_verbatim() {
        let m = event_message("p1", None, "{\"emoji\":\"\u{1f44d}\"}");
        let v: Value = serde_json::from_str(&m).unwrap();
        assert_eq!(v["type"], "event");
        assert_eq!(v["by"], "p1");
        assert_eq!(v["data"]["emoji"], "\u{1f44d}");
        let m = event_message("svc-k", Some("AI \"bot\""), "[1,2]");
        let v: Value = serde_json::from_str(&m).unwrap();
        assert_eq!(v["name"], "AI \"bot\"");
        assert_eq!(v["data"], json!([1, 2]));
    }
}
