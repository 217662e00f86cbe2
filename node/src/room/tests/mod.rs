//! The room core, driven by hand: commands in, frames and effects out, time
//! moved by the test. No socket, store, journal or clock is involved, so every
//! rule is checked deterministically and the whole set runs in milliseconds.

mod edits;
mod lifecycle;
mod people;
mod presence;
mod snapshots;

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::access::Seat;
use super::core::{Effect, Exit, Opened, RoomCore, Rules};
use super::recent::RecentOps;
use super::snapshot::SnapshotJob;
use super::{JoinError, JoinRequest, Joined, RoomCmd};
use crate::config::NodeConfig;
use crate::doc::{DocLimits, Document};
use crate::ids::{AccountId, ClientKey, FileId};
use crate::journal::Appended;
use crate::memory::MemoryGuard;
use crate::outbox::{outbox, Budget, ConnId, Out, OutboxReceiver};
use crate::protocol::{self, ClientMessage};
use crate::store::{FileAppend, FileRecord, LinkAccess, StoreError};

pub const VIEW_KEY: &str = "view-key-0123456789";
pub const EDIT_KEY: &str = "edit-key-0123456789";

/// A room core with a test's own clock.
pub struct Harness {
    pub core: RoomCore,
    pub now: Instant,
    pub owner: AccountId,
    /// Appends handed out and not yet reported durable, oldest first.
    pub appends: Vec<FileAppend>,
    pub snapshots: Vec<SnapshotJob>,
    pub exit: Option<Exit>,
    next_client: u8,
}

/// One socket in the room, as its writer would see it.
pub struct Person {
    pub conn: ConnId,
    pub client: ClientKey,
    pub joined: Joined,
    pub seat: Seat,
    rx: OutboxReceiver,
}

impl Person {
    /// Every message queued for this socket since the last look, as JSON.
    pub fn frames(&mut self) -> Vec<Value> {
        self.rx
            .drain_now()
            .into_iter()
            .filter_map(|out| match out {
                Out::Message(m) => serde_json::from_slice(m.payload()).ok(),
                Out::Control(_) => None,
            })
            .collect()
    }

    /// The messages of one type since the last look (others are dropped).
    pub fn of_type(&mut self, kind: &str) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|m| m["type"] == kind)
            .collect()
    }

    /// The close code asked for this socket, if any.
    pub fn closed(&self) -> Option<u16> {
        self.rx.close.requested().map(|c| c.code)
    }
}

/// How a test joins: as the file's owner, or with one of its link keys.
#[derive(Clone, Copy)]
pub enum As {
    Owner,
    Editor,
    Viewer,
}

pub fn record(owner: &AccountId, link: LinkAccess) -> FileRecord {
    FileRecord {
        id: FileId::generate(),
        owner: owner.clone(),
        name: "Test file".into(),
        link,
        view_key: VIEW_KEY.into(),
        edit_key: EDIT_KEY.into(),
        key_generation: 1,
        version: 0,
        updated_at: 0,
    }
}

pub fn config(settings: &[(&str, &str)]) -> NodeConfig {
    let mut args = vec!["atrium-node".to_string()];
    for (k, v) in settings {
        args.push(format!("--{k}={v}"));
    }
    NodeConfig::parse_from(args)
}

impl Harness {
    pub fn new() -> Self {
        Self::with(&[], u64::MAX / 4)
    }

    /// A room with these settings (`--flag=value` names) and memory budget.
    pub fn with(settings: &[(&str, &str)], memory: u64) -> Self {
        let config = Arc::new(config(settings));
        let owner = AccountId::generate();
        let record = record(&owner, LinkAccess::Edit);
        let recent = RecentOps::new(config.room_ops, config.room_ops_bytes);
        let rules = Rules {
            metrics: crate::metrics::Metrics::new(),
            config,
            limits: DocLimits::default(),
            memory: MemoryGuard::new(memory),
            welcome_budget: Budget::new(64 << 20),
        };
        let now = Instant::now();
        let opened = Opened {
            file: record.id.clone(),
            record,
            epoch: 7,
            doc: Document::new(),
            version: 0,
            recent,
        };
        let core = RoomCore::new(opened, rules, Arc::new(AtomicUsize::new(0)), now);
        Self {
            core,
            now,
            owner,
            appends: Vec::new(),
            snapshots: Vec::new(),
            exit: None,
            next_client: 0,
        }
    }

    pub fn advance(&mut self, by: Duration) {
        self.now += by;
    }

    /// Serves one command as the shell would, collecting its effects.
    pub fn send(&mut self, cmd: RoomCmd) {
        let exit = self.core.handle(cmd, self.now);
        self.exit = self.exit.or(exit);
        self.collect();
    }

    fn collect(&mut self) {
        for effect in self.core.effects() {
            match effect {
                Effect::Append(a) => self.appends.push(a),
                Effect::Snapshot(job) => self.snapshots.push(job),
            }
        }
    }

    /// Ends the turn: what was accepted goes out as one append (returned).
    pub fn end_turn(&mut self) -> Option<FileAppend> {
        self.core.end_turn(self.now);
        let before = self.appends.len();
        self.collect();
        (self.appends.len() > before).then(|| self.appends.last().cloned().expect("an append"))
    }

    /// The journal reports everything up to `upto` durable.
    pub fn durable(&mut self, upto: u64) {
        self.appends
            .retain(|a| a.patches.last().is_some_and(|p| p.version > upto));
        self.send(RoomCmd::Appended(Appended {
            upto,
            result: Ok(()),
        }));
    }

    /// Ends the turn and makes it durable at once.
    pub fn commit(&mut self) {
        if let Some(a) = self.end_turn() {
            let upto = a.patches.last().map_or(0, |p| p.version);
            self.durable(upto);
        }
    }

    /// The journal reports the last append refused.
    pub fn refused(&mut self, error: StoreError) {
        self.send(RoomCmd::Appended(Appended {
            upto: 0,
            result: Err(error),
        }));
    }

    pub fn housekeeping(&mut self) {
        let exit = self.core.housekeeping(self.now);
        self.exit = self.exit.or(exit);
        self.collect();
    }

    pub fn try_join(&mut self, who: As, since: Option<u64>) -> Result<Person, JoinError> {
        self.next_client += 1;
        let client = ClientKey([self.next_client; 16]);
        self.try_join_as(who, client, since)
    }

    /// Joins with a given client id (a second socket of the same client replaces the first).
    pub fn try_join_as(
        &mut self,
        who: As,
        client: ClientKey,
        since: Option<u64>,
    ) -> Result<Person, JoinError> {
        let (out, rx) = outbox(1024, 64 << 20, self.core.rules.metrics.clone());
        let conn = out.id;
        let seat = Seat::default();
        let (account, key) = match who {
            As::Owner => (Some((self.owner.clone(), "Owner".to_string())), None),
            As::Editor => (None, Some(EDIT_KEY.to_string())),
            As::Viewer => (None, Some(VIEW_KEY.to_string())),
        };
        let req = JoinRequest {
            outbox: out,
            client,
            account,
            key,
            name: Some(format!("Guest {}", client.0[0])),
            since,
            stored_op: 0,
            seat: seat.clone(),
        };
        let (tx, mut reply) = oneshot::channel();
        self.send(RoomCmd::Join(req, tx));
        let joined = reply.try_recv().expect("the core answers a join at once")?;
        Ok(Person {
            conn,
            client,
            joined,
            seat,
            rx,
        })
    }

    /// Joins and makes the welcome durable, so it is delivered.
    pub fn join(&mut self, who: As) -> Person {
        let mut p = self.try_join(who, None).expect("join");
        self.commit();
        let welcome = p.frames();
        assert_eq!(
            welcome.first().map(|w| w["type"].clone()),
            Some(json!("welcome"))
        );
        p
    }

    /// Sends a patch of `ops` with op id `id`.
    pub fn patch(&mut self, from: &Person, id: u64, ops: Value) {
        let text = json!({"type": "patch", "id": id, "ops": ops}).to_string();
        let Ok(ClientMessage::Patch(patch)) = protocol::parse(&text, &DocLimits::default()) else {
            panic!("not a patch: {text}");
        };
        let ticket = super::registry::Ticket::detached();
        self.send(RoomCmd::Patch(from.conn, patch, ticket));
    }

    pub fn presence(&mut self, from: &Person, update: Value) {
        let mut msg = update;
        msg["type"] = json!("presence");
        let text = msg.to_string();
        let Ok(ClientMessage::Presence(update)) = protocol::parse(&text, &DocLimits::default())
        else {
            panic!("not a presence update: {text}");
        };
        self.send(RoomCmd::Presence(from.conn, update));
    }

    pub fn leave(&mut self, p: &Person) {
        self.send(RoomCmd::Leave(p.conn));
    }

    /// One whole presence tick: the round starts and every slice is served.
    pub fn tick(&mut self) {
        self.core.presence_tick(self.now);
        while self.core.board.in_round() {
            self.core.serve_presence_slice(self.now);
        }
    }

    pub fn version(&self) -> u64 {
        self.core.version
    }
}

/// A room with its owner and one more person, both welcomed.
pub fn owner_and(who: As) -> (Harness, Person, Person) {
    let mut h = Harness::new();
    let owner = h.join(As::Owner);
    let other = h.join(who);
    (h, owner, other)
}

/// The version each message carries.
pub fn versions(messages: &[Value]) -> Vec<u64> {
    messages.iter().filter_map(|m| m["v"].as_u64()).collect()
}

/// `put` of one shape.
pub fn put(id: &str, props: Value) -> Value {
    json!([{"op": "put", "id": id, "props": props}])
}
