//! A room: one open file, everyone in it, and the single writer of its versions.
//!
//! Each room is one task that owns its document. Sockets send it commands; it
//! validates and applies patches in arrival order, giving each the next version,
//! and hands each turn's patches to the [journal](crate::journal). Nothing a patch
//! causes (its ack, its relay, a welcome that includes it) leaves the room before
//! the journal reports it durable: those wait in `pending`, in version order.
//!
//! ```text
//! socket ──Patch──▶ room: apply, version+1 ──turn──▶ journal: one commit, one sync
//!                    ▲                                   │
//!                    └──────────── Appended(upto) ◀──────┘
//!                    release pending ≤ upto: ack to the sender, patch to everyone else
//! ```

pub mod access;
mod load;
mod presence;
pub mod registry;
pub mod ring;
mod seats;
mod snapshot;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use atrium_coordinator::{Coordinator, LeaseKeeper, NodeId};

use crate::config::NodeConfig;
use crate::doc::{DocLimits, Document};
use crate::ids::{AccountId, ClientKey, FileId, PersonId};
use crate::journal::{Appended, Journal, JournalEntry};
use crate::metrics::metrics;
use crate::outbox::{shared, Budget, ConnId, Msg, Outbox};
use crate::protocol::{self, Patch, PresenceUpdate, Refusal};
use crate::store::{FileAppend, FileRecord, LoggedPatch, Store, StoreError};
use access::{Access, Denied, Role};
use registry::RoomMap;
use ring::{Ring, RingEntry};

/// What rooms share: settings, the store, the journal and the coordinator.
pub struct RoomContext {
    pub config: Arc<NodeConfig>,
    pub store: Arc<dyn Store>,
    pub journal: Journal,
    pub limits: DocLimits,
    pub coordinator: Arc<dyn Coordinator>,
    pub node: NodeId,
    /// Node-wide allowance for welcomes bigger than a send queue.
    pub welcome_budget: Arc<Budget>,
}

#[derive(Clone)]
pub struct JoinRequest {
    pub outbox: Outbox,
    pub client: ClientKey,
    pub account: Option<(AccountId, String)>,
    pub key: Option<String>,
    pub name: Option<String>,
    pub since: Option<u64>,
    /// The client's highest durable op id in this file, read from the store.
    pub stored_op: u64,
}

#[derive(Debug)]
pub struct Joined {
    pub person: PersonId,
    pub role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinError {
    Denied(Denied),
    NotFound,
    /// The file has as many people as it allows (4031).
    Full,
    /// The room is closing; ask the registry again.
    Retry,
    /// The node is shutting down or cannot load the file.
    Unavailable(u16),
}

impl JoinError {
    pub fn reason(self) -> &'static str {
        match self {
            JoinError::Denied(Denied::Unauthorized) => "not signed in, or a bad key",
            JoinError::Denied(Denied::Forbidden) => "no access to this file",
            JoinError::NotFound => "file not found",
            JoinError::Full => "the file is full",
            JoinError::Retry | JoinError::Unavailable(1013) => "try again later",
            JoinError::Unavailable(4009) => "moved: another node serves this file",
            JoinError::Unavailable(_) => "server restarting",
        }
    }

    pub fn close_code(self) -> u16 {
        match self {
            JoinError::Denied(d) => d.close_code(),
            JoinError::NotFound => 4004,
            JoinError::Full => 4031,
            JoinError::Retry => 1013,
            JoinError::Unavailable(code) => code,
        }
    }
}

pub enum RoomCmd {
    Join(JoinRequest, oneshot::Sender<Result<Joined, JoinError>>),
    Leave(ConnId),
    Patch(ConnId, Patch),
    Presence(ConnId, PresenceUpdate),
    Appended(Appended),
    SnapshotDone(Result<u64, StoreError>),
    /// The file's settings changed (link, keys, name).
    FileChanged(FileRecord),
    /// The file was deleted: everyone leaves with 4004.
    Deleted,
    /// The current document, once everything in it is durable.
    GetDoc(oneshot::Sender<(u64, String)>),
    /// Finish what is in flight, close every socket with 1012, and stop.
    Shutdown(oneshot::Sender<()>),
    /// The file belongs to another node now (the ring changed): finish what is
    /// in flight, release the lease, close every socket with 4009, and stop.
    Move,
}

struct Member {
    outbox: Outbox,
    person: PersonId,
    client: ClientKey,
    name: String,
    account: Option<AccountId>,
    role: Role,
    access: Access,
    /// The version its welcome brought it to: it gets relays only above it.
    from_version: u64,
}

impl Member {
    fn person_json(&self, page: Option<&str>) -> serde_json::Value {
        json!({
            "id": self.person.as_str(),
            "name": self.name,
            "account": self.account.as_ref().map(|a| a.as_str()),
            "role": self.role.as_str(),
            "page": page,
        })
    }
}

/// Something waiting for a version to become durable.
enum Pending {
    /// An accepted patch: its ack for the sender, its relay for everyone else.
    Patch {
        v: u64,
        from: ConnId,
        ack: Msg,
        relay: Msg,
    },
    /// A frame for one socket (the ack of a resent patch).
    Direct { v: u64, to: ConnId, frame: Msg },
    /// A welcome: it may be larger than a send queue (see [`Budget`]).
    Welcome { v: u64, to: ConnId, frame: Msg },
    Doc {
        v: u64,
        doc: String,
        reply: oneshot::Sender<(u64, String)>,
    },
}

impl Pending {
    fn version(&self) -> u64 {
        match self {
            Pending::Patch { v, .. }
            | Pending::Direct { v, .. }
            | Pending::Welcome { v, .. }
            | Pending::Doc { v, .. } => *v,
        }
    }
}

struct ClientState {
    person: PersonId,
    highest_op: u64,
}

/// Housekeeping cadence: idle checks, time-based snapshots, store stalls.
const HOUSEKEEPING: Duration = Duration::from_secs(1);
/// A patch waiting this long for the store brings a 503 notice...
const STALL_NOTICE: Duration = Duration::from_secs(1);
/// ...and this long closes the room's sockets with 1013.
const STALL_CLOSE: Duration = Duration::from_secs(5);

pub struct Room {
    file: FileId,
    generation: u64,
    ctx: Arc<RoomContext>,
    rooms: RoomMap,
    tx: mpsc::UnboundedSender<RoomCmd>,
    record: FileRecord,
    epoch: u64,
    doc: Document,
    /// The last version applied in memory.
    version: u64,
    /// The last version synced to disk.
    durable: u64,
    ring: Ring,
    clients: HashMap<ClientKey, ClientState>,
    members: HashMap<ConnId, Member>,
    /// People with edit access waiting for an editor seat, in arrival order.
    waiting: VecDeque<ConnId>,
    pending: VecDeque<Pending>,
    /// Accepted this turn, not yet handed to the journal.
    unsent: Vec<LoggedPatch>,
    /// Handed to the journal: (last version, when, how many patches).
    in_flight: VecDeque<(u64, Instant, usize)>,
    board: presence::Board,
    /// When the next presence tick may start.
    next_tick: tokio::time::Instant,
    /// The presence rate clients were last told (it drops in busy rooms).
    presence_hz: u32,
    snapshot: snapshot::SnapshotState,
    idle_since: Option<Instant>,
    /// Set once the room is finishing (shutdown or move): it takes nothing new
    /// and ends as soon as everything accepted is durable and delivered.
    finishing: Option<Finishing>,
    /// The file's lease, renewed in the background while the room lives.
    lease: Option<LeaseKeeper>,
    /// People in the room, shared with its registry handle.
    people: Arc<AtomicUsize>,
    /// Editors this room has added to the node's editor gauge.
    editors_counted: i64,
    /// Whether this store stall was announced already.
    stall_noticed: bool,
}

/// How a room ended.
#[derive(Debug, Clone, Copy)]
enum Exit {
    Idle,
    Shutdown,
    /// Handed over to the file's new ring owner.
    Moved,
    Deleted,
    Fenced,
}

struct Finishing {
    exit: Exit,
    reply: Option<oneshot::Sender<()>>,
}

impl Room {
    /// Runs a room until it ends: loads the file first (taking its epoch), then
    /// serves commands in turns.
    pub async fn run(
        file: FileId,
        generation: u64,
        ctx: Arc<RoomContext>,
        rooms: RoomMap,
        (tx, mut rx): (
            mpsc::UnboundedSender<RoomCmd>,
            mpsc::UnboundedReceiver<RoomCmd>,
        ),
        people: Arc<AtomicUsize>,
    ) {
        let mut room = match load::load(&file, generation, ctx, rooms.clone(), tx, people).await {
            Ok(room) => room,
            Err(error) => {
                tracing::warn!(file = %file, ?error, "room could not open");
                registry::remove(&rooms, &file, generation);
                refuse_all(&mut rx, error);
                return;
            }
        };
        let mut lease_lost = room.lease.as_ref().map(LeaseKeeper::lost);
        metrics().rooms.inc();
        let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut commands = Vec::with_capacity(64);
        let exit = loop {
            tokio::select! {
                n = rx.recv_many(&mut commands, 256) => {
                    if n == 0 {
                        break Exit::Shutdown;
                    }
                    let mut exit = None;
                    for cmd in commands.drain(..) {
                        if let Some(e) = room.handle(cmd) {
                            exit = Some(e);
                            break;
                        }
                    }
                    if let Some(e) = exit {
                        break e;
                    }
                    room.end_turn();
                }
                _ = housekeeping.tick() => {
                    if let Some(e) = room.housekeeping() {
                        break e;
                    }
                }
                _ = tokio::time::sleep_until(room.next_tick), if room.board.wants_tick() => {
                    let period = room.tick_period();
                    room.board.start_round(period);
                    room.next_tick = tokio::time::Instant::now() + room.tick_period();
                }
                _ = std::future::ready(()), if room.board.in_round() => {
                    room.board.serve_slice();
                }
                _ = lost(&mut lease_lost) => {
                    tracing::warn!(file = %room.file, "lease lost; closing the room");
                    break Exit::Fenced;
                }
            }
            if let Some(e) = room.maybe_finish() {
                break e;
            }
        };
        tracing::debug!(file = %room.file, ?exit, "room ends");
        registry::remove(&room.rooms, &room.file, room.generation);
        metrics().rooms.dec();
        metrics().people.sub(room.members.len() as i64);
        let code = match exit {
            Exit::Deleted => Some((4004, "file deleted")),
            Exit::Fenced | Exit::Moved => Some((4009, "moved: this node no longer owns the file")),
            Exit::Shutdown => Some((1012, "server restarting")),
            Exit::Idle => None,
        };
        if let Some((code, reason)) = code {
            for m in room.members.values() {
                m.outbox.close(code, reason);
            }
        }
        room.members.clear();
        room.sync_counts();
        if let Some(keeper) = room.lease.take() {
            if let Err(e) = keeper.release().await {
                tracing::debug!(file = %room.file, error = %e, "lease release failed; it will lapse");
            }
        }
        if let Some(reply) = room.finishing.take().and_then(|f| f.reply) {
            let _ = reply.send(());
        }
        // Whoever raced the registry removal is told to ask again.
        rx.close();
        refuse_all(&mut rx, JoinError::Retry);
    }

    fn handle(&mut self, cmd: RoomCmd) -> Option<Exit> {
        match cmd {
            RoomCmd::Join(req, reply) => {
                let result = self.join(req);
                let _ = reply.send(result);
            }
            RoomCmd::Leave(conn) => self.leave(conn),
            RoomCmd::Patch(conn, patch) => self.patch(conn, patch),
            RoomCmd::Presence(conn, update) => self.board.update(conn, update),
            RoomCmd::Appended(a) => return self.appended(a),
            RoomCmd::SnapshotDone(result) => return self.snapshot_done(result),
            RoomCmd::FileChanged(record) => self.file_changed(record),
            RoomCmd::Deleted => return Some(Exit::Deleted),
            RoomCmd::GetDoc(reply) => {
                let doc = self.doc.to_json();
                self.after_durable(Pending::Doc {
                    v: self.version,
                    doc,
                    reply,
                });
            }
            RoomCmd::Shutdown(reply) => {
                self.finishing = Some(Finishing {
                    exit: Exit::Shutdown,
                    reply: Some(reply),
                });
            }
            RoomCmd::Move => {
                self.finishing.get_or_insert(Finishing {
                    exit: Exit::Moved,
                    reply: None,
                });
            }
        }
        None
    }

    fn join(&mut self, req: JoinRequest) -> Result<Joined, JoinError> {
        if let Some(f) = &self.finishing {
            let code = if matches!(f.exit, Exit::Moved) {
                4009
            } else {
                1012
            };
            return Err(JoinError::Unavailable(code));
        }
        let account_id = req.account.as_ref().map(|(id, _)| id);
        let access = access::access(&self.record, account_id, req.key.as_deref())
            .map_err(JoinError::Denied)?;
        let (allowed, mut reason) =
            access::role(&self.record, access).map_err(JoinError::Denied)?;

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
            .members
            .iter()
            .filter(|(_, m)| m.client == req.client)
            .map(|(c, _)| *c)
            .collect();
        if replaced.is_empty() && self.members.len() >= self.ctx.config.room_people {
            return Err(JoinError::Full);
        }
        let mut page = None;
        for conn in &replaced {
            if let Some(old) = self.members.remove(conn) {
                old.outbox
                    .close(4010, "replaced by a newer socket of the same client");
                page = self.board.leave(*conn, false).flatten();
                self.waiting.retain(|c| c != conn);
                metrics().people.dec();
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
        let member = Member {
            outbox: req.outbox.clone(),
            person: person.clone(),
            client: req.client,
            name,
            account: req.account.map(|(id, _)| id),
            role,
            access,
            from_version: self.version,
        };
        let returning = self.board.cancel_leave(&person);
        if replaced.is_empty() && !returning {
            let join = json!({"type": "join", "people": [member.person_json(page.as_deref())]});
            self.broadcast(shared(join.to_string()), "join");
        }
        self.board
            .join(conn, req.outbox.clone(), person.clone(), page);
        self.members.insert(conn, member);
        metrics().people.inc();
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

    fn welcome(
        &self,
        conn: ConnId,
        role: Role,
        reason: Option<&str>,
        since: Option<u64>,
        client: ClientKey,
    ) -> String {
        let me = &self.members[&conn];
        let people: Vec<serde_json::Value> = self
            .members
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
        match since.and_then(|s| self.ring.resume(s, self.version, client)) {
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

    fn leave(&mut self, conn: ConnId) {
        if let Some(m) = self.members.remove(&conn) {
            metrics().people.dec();
            self.board.leave(conn, true);
            self.waiting.retain(|c| *c != conn);
            if m.role == Role::Editor {
                self.settle_roles();
            }
            self.sync_counts();
            self.update_presence_rate();
        }
        if self.members.is_empty() {
            self.idle_since = Some(Instant::now());
        }
    }

    /// Busy rooms tick slower; clients are told whenever the rate changes.
    fn update_presence_rate(&mut self) {
        let config = &self.ctx.config;
        let hz = if self.members.len() > config.busy_room {
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
    fn sync_counts(&mut self) {
        self.people
            .store(self.members.len(), std::sync::atomic::Ordering::Relaxed);
        let editors = self
            .members
            .values()
            .filter(|m| m.role == Role::Editor)
            .count() as i64;
        metrics().editors.add(editors - self.editors_counted);
        self.editors_counted = editors;
    }

    fn tick_period(&self) -> Duration {
        Duration::from_micros(1_000_000 / u64::from(self.presence_hz.max(1)))
    }

    fn patch(&mut self, conn: ConnId, patch: Patch) {
        let Some(member) = self.members.get(&conn) else {
            return;
        };
        let outbox = member.outbox.clone();
        let refuse = |code: &'static str, message: &str| {
            metrics().rejects.with_label_values(&[code]).inc();
            outbox.send_text(protocol::reject(&Refusal {
                id: Some(patch.id),
                code,
                message: message.into(),
            }));
        };
        if self.finishing.is_some() {
            // Not applied: the client resends it after reconnecting.
            return;
        }
        if member.role != Role::Editor {
            if self.is_waiting(conn) {
                refuse(
                    seats::EDITORS_FULL,
                    "the file has as many editors as it allows",
                );
            } else {
                refuse("viewer", "viewers cannot edit this file");
            }
            return;
        }
        let client = member.client;
        let person = member.person.clone();
        let state = self
            .clients
            .get_mut(&client)
            .expect("every member has a client state");
        if patch.id <= state.highest_op {
            // A resend: answered, never applied twice.
            let v = self
                .ring
                .version_of(client, patch.id)
                .unwrap_or(self.version);
            let ack = protocol::ack(patch.id, v, patch.t.as_deref());
            self.after_durable(Pending::Direct {
                v,
                to: conn,
                frame: shared(ack),
            });
            return;
        }
        if let Err(e) = self.doc.apply(&patch.ops, &self.ctx.limits) {
            refuse(e.code(), &e.to_string());
            return;
        }
        state.highest_op = patch.id;
        self.version += 1;
        let v = self.version;
        let relay = shared(protocol::relay(
            v,
            person.as_str(),
            &patch.ops_json,
            patch.t.as_deref(),
        ));
        let ack = shared(protocol::ack(patch.id, v, patch.t.as_deref()));
        self.snapshot.logged(patch.ops_json.len());
        self.ring.push(RingEntry {
            v,
            client,
            op_id: patch.id,
            t: patch.t.clone(),
            relay: relay.clone(),
        });
        self.unsent.push(LoggedPatch {
            version: v,
            client,
            op_id: patch.id,
            by: person.to_string(),
            ops: patch.ops_json,
            t: patch.t,
        });
        self.pending.push_back(Pending::Patch {
            v,
            from: conn,
            ack,
            relay,
        });
    }

    /// Queues `p` until its version is durable, or delivers it now if it is.
    fn after_durable(&mut self, p: Pending) {
        if p.version() <= self.durable && self.pending.is_empty() {
            self.deliver(p);
        } else {
            self.pending.push_back(p);
        }
    }

    fn deliver(&mut self, p: Pending) {
        match p {
            Pending::Patch {
                v,
                from,
                ack,
                relay,
            } => {
                let mut relayed = 0;
                for (conn, m) in &self.members {
                    if *conn == from {
                        m.outbox.send(ack.clone());
                    } else if m.from_version < v {
                        m.outbox.send(relay.clone());
                        relayed += 1;
                    }
                }
                metrics().patches_acked.inc();
                metrics().messages_sent.with_label_values(&["ack"]).inc();
                metrics()
                    .messages_sent
                    .with_label_values(&["patch"])
                    .inc_by(relayed);
            }
            Pending::Direct { to, frame, .. } => {
                if let Some(m) = self.members.get(&to) {
                    m.outbox.send(frame);
                }
            }
            Pending::Welcome { to, frame, .. } => {
                if let Some(m) = self.members.get(&to) {
                    m.outbox.send_large(frame, &self.ctx.welcome_budget);
                    metrics()
                        .messages_sent
                        .with_label_values(&["welcome"])
                        .inc();
                }
            }
            Pending::Doc { v, doc, reply } => {
                let _ = reply.send((v, doc));
            }
        }
    }

    fn release(&mut self) {
        while self
            .pending
            .front()
            .is_some_and(|p| p.version() <= self.durable)
        {
            let p = self.pending.pop_front().expect("front exists");
            self.deliver(p);
        }
    }

    /// Sends one encoded message to everyone in the room.
    fn broadcast(&self, frame: Msg, kind: &str) {
        for m in self.members.values() {
            m.outbox.send(frame.clone());
        }
        metrics()
            .messages_sent
            .with_label_values(&[kind])
            .inc_by(self.members.len() as u64);
    }

    /// After every turn: hand the turn's patches to the journal.
    fn end_turn(&mut self) {
        if self.unsent.is_empty() {
            return;
        }
        let patches = std::mem::take(&mut self.unsent);
        let upto = patches.last().map_or(0, |p| p.version);
        self.in_flight
            .push_back((upto, Instant::now(), patches.len()));
        let tx = self.tx.clone();
        let submitted = self.ctx.journal.submit(JournalEntry {
            append: FileAppend {
                file: self.file.clone(),
                epoch: self.epoch,
                patches,
            },
            done: Box::new(move |a| {
                let _ = tx.send(RoomCmd::Appended(a));
            }),
        });
        if !submitted {
            tracing::error!(file = %self.file, "journal stopped; patches stay unacked");
        }
    }

    fn appended(&mut self, a: Appended) -> Option<Exit> {
        match a.result {
            Ok(()) => {
                self.durable = self.durable.max(a.upto);
                while self
                    .in_flight
                    .front()
                    .is_some_and(|(v, _, _)| *v <= self.durable)
                {
                    let (_, at, n) = self.in_flight.pop_front().expect("front exists");
                    let secs = at.elapsed().as_secs_f64();
                    for _ in 0..n {
                        metrics().patch_durable_seconds.observe(secs);
                    }
                }
                self.release();
                self.maybe_snapshot();
                None
            }
            Err(StoreError::NotFound) => Some(Exit::Deleted),
            Err(e) => {
                tracing::warn!(file = %self.file, error = %e, "append fenced; closing the room");
                Some(Exit::Fenced)
            }
        }
    }

    fn file_changed(&mut self, record: FileRecord) {
        self.record = record;
        let gone: Vec<ConnId> = self
            .members
            .iter()
            .filter(|(_, m)| access::role(&self.record, m.access).is_err())
            .map(|(c, _)| *c)
            .collect();
        for conn in gone {
            if let Some(m) = self.members.get(&conn) {
                m.outbox.close(4003, "no access any more");
            }
            self.leave(conn);
        }
        self.settle_roles();
    }

    fn housekeeping(&mut self) -> Option<Exit> {
        self.maybe_snapshot();
        self.check_store_stall();
        let idle = self
            .idle_since
            .is_some_and(|since| since.elapsed() >= self.ctx.config.room_idle());
        let saved = self.pending.is_empty() && self.in_flight.is_empty() && self.unsent.is_empty();
        (idle && saved && self.members.is_empty() && !self.snapshot.in_flight())
            .then_some(Exit::Idle)
    }

    /// While the store cannot make patches durable, they wait (unacked): after
    /// [`STALL_NOTICE`] everyone hears a 503 notice; after [`STALL_CLOSE`] sockets
    /// close with 1013, so clients back off and resend what is unconfirmed. The
    /// journal keeps retrying; nothing accepted is dropped.
    fn check_store_stall(&mut self) {
        let Some((_, since, _)) = self.in_flight.front() else {
            self.stall_noticed = false;
            return;
        };
        let waited = since.elapsed();
        if waited >= STALL_CLOSE {
            for m in self.members.values() {
                m.outbox.close(
                    1013,
                    "the node cannot save edits right now; try again later",
                );
            }
        } else if waited >= STALL_NOTICE && !self.stall_noticed {
            self.stall_noticed = true;
            let notice = protocol::notice(
                503,
                "saving is delayed: your edits wait and will be applied in order",
            );
            self.broadcast(shared(notice), "notice");
        }
    }

    /// A finishing room ends once everything accepted is durable and delivered.
    fn maybe_finish(&mut self) -> Option<Exit> {
        let done = self.pending.is_empty() && self.in_flight.is_empty() && self.unsent.is_empty();
        self.finishing.as_ref().filter(|_| done).map(|f| f.exit)
    }
}

/// Completes when the lease is reported lost (never, without a lease).
async fn lost(watch: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    match watch {
        Some(w) => {
            if w.wait_for(|lost| *lost).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Answers every queued command of a room that cannot serve them.
fn refuse_all(rx: &mut mpsc::UnboundedReceiver<RoomCmd>, error: JoinError) {
    while let Ok(cmd) = rx.try_recv() {
        match cmd {
            RoomCmd::Join(_, reply) => {
                let _ = reply.send(Err(error));
            }
            RoomCmd::Shutdown(reply) => {
                let _ = reply.send(());
            }
            _ => {}
        }
    }
}
