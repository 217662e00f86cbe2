//! A room core driven by hand: commands in, the test's own clock, effects
//! carried out (or held back) by the test.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::*;

/// A room core with a test's own clock.
pub struct Harness {
    pub(super) core: RoomCore,
    pub(super) now: Instant,
    pub(super) owner: AccountId,
    /// Appends handed out and not yet reported durable, oldest first.
    pub(super) appends: Vec<FileAppend>,
    pub(super) snapshots: Vec<SnapshotJob>,
    pub(super) history: Vec<crate::room::history::HistoryJob>,
    /// Webhook events the core asked for: (type, data).
    pub(super) webhooks: Vec<(&'static str, serde_json::Value)>,
    /// Restores to prepare (the lane's work), held until the test runs them.
    pub(super) restores: Vec<crate::room::restore::PrepareJob>,
    pub(super) exit: Option<Exit>,
    pub(super) next_client: u8,
    /// What the store's `client_ops` would hold: each client's highest durable op id.
    pub(super) stored_ops: std::collections::HashMap<crate::ids::ClientKey, u64>,
    /// When the next join's op id is read (unset: now, just before the join).
    pub(super) read_at: Option<Instant>,
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
        let metrics = crate::metrics::Metrics::new();
        let rules = Rules {
            metrics: metrics.clone(),
            config: config.clone(),
            limits: DocLimits::default(),
            memory: MemoryGuard::new(memory),
            welcome_budget: Budget::new(64 << 20),
            documents_sent: Arc::new(crate::limits::KeyedLimiter::bytes(
                config.document_bytes_per_ip_per_second,
                config.document_burst_bytes_per_ip,
                1000,
            )),
            storage: Arc::new(crate::storage::Storage::unlimited(&metrics)),
            rewrites: Arc::new(crate::room::AddressRewrites::new(config.max_doc_bytes)),
        };
        let now = Instant::now();
        let opened = Opened {
            file: record.id.clone(),
            record,
            epoch: 7,
            doc: Document::new(),
            version: 0,
            recent,
            taken_at: now,
        };
        let core = RoomCore::new(opened, rules, Arc::new(AtomicUsize::new(0)), now);
        Self {
            core,
            now,
            owner,
            appends: Vec::new(),
            snapshots: Vec::new(),
            history: Vec::new(),
            webhooks: Vec::new(),
            restores: Vec::new(),
            exit: None,
            next_client: 0,
            stored_ops: Default::default(),
            read_at: None,
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
                Effect::History(job) => self.history.push(job),
                Effect::Webhook(kind, data, _) => self.webhooks.push((kind, data)),
                Effect::Restore(job) => self.restores.push(job),
            }
        }
    }

    /// Does the lane's work for the restores asked for, and hands each back to the room.
    pub fn prepare_restores(&mut self) {
        for job in std::mem::take(&mut self.restores) {
            self.send(RoomCmd::RestorePrepared(job.run()));
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
        let landed = self.appends.iter().flat_map(|a| &a.patches);
        for p in landed.filter(|p| p.version <= upto) {
            let op = self.stored_ops.entry(p.client).or_default();
            *op = (*op).max(p.op_id);
        }
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
        self.housekeeping_with(false);
    }

    /// Housekeeping while the room's share of memory is (or is not) wanted for another room.
    pub fn housekeeping_with(&mut self, share_wanted: bool) {
        let exit = self.core.housekeeping(self.now, share_wanted);
        self.exit = self.exit.or(exit);
        self.collect();
    }

    /// Sends a patch of `ops` with op id `id`.
    pub fn patch(&mut self, from: &Person, id: u64, ops: Value) {
        let text = json!({"type": "patch", "id": id, "ops": ops}).to_string();
        let Ok(ClientMessage::Patch(patch)) = protocol::parse(&text, &DocLimits::default()) else {
            panic!("not a patch: {text}");
        };
        let ticket = super::super::registry::Ticket::detached();
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
