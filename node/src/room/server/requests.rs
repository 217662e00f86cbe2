//! What the app's server sends a room and gets back: server patches and their answers, the
//! room's memory of recent server ops, people queries, kicks and broadcast events. Plain data
//! the HTTP handlers build and the room's code ([`super`]) acts on.

use std::collections::{HashMap, VecDeque};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use crate::doc::Op;
use crate::ids::ClientKey;
use crate::outbox::ConnId;

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
    pub ticket: crate::room::registry::Ticket,
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

    pub(in crate::room) fn insert(&mut self, client: ClientKey, v: u64, durable: u64) {
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
