//! The room's core: everything a room decides, with no I/O, no tasks and no clock.
//!
//! The core takes commands and the time they arrive, and answers with effects.
//! Frames for sockets go straight into their outboxes (plain queues the socket
//! writers drain); what needs the world outside (a turn's patches for the journal,
//! a snapshot to write) is returned as an [`Effect`] for the shell in
//! [`Room::run`](super::Room::run) to carry out. The shell feeds back what came
//! of it ([`RoomCmd::Appended`], [`RoomCmd::SnapshotDone`]). Unit tests drive the
//! core the same way, deterministically, in `room/tests/`.
//!
//! ```text
//!   commands, now ──▶ RoomCore ──▶ frames into outboxes
//!                        │
//!                        └──▶ Effect::Append (journal), Effect::Snapshot, exit
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::exit::{Effect, Exit, Finishing};
use super::participant::{ClientState, Participant};
use super::pending::Pending;
use super::recent::RecentOps;
use super::snapshot::SnapshotState;
use super::{access, presence, RoomCmd};
use crate::config::NodeConfig;
use crate::doc::{DocLimits, Document};
use crate::ids::{ClientKey, FileId};
use crate::memory::MemoryGuard;
use crate::outbox::{Budget, ConnId, Msg};
use crate::storage::Share;
use crate::store::{FileAppend, FileRecord, Holder, LoggedPatch};

pub use super::rewrites::{REWRITE_BURST, REWRITE_PER_SECOND};

/// A patch waiting this long for the store brings a 503 notice...
pub const STALL_NOTICE: Duration = Duration::from_secs(1);
/// ...and this long closes the room's sockets with 1013.
pub const STALL_CLOSE: Duration = Duration::from_secs(5);

/// What the core needs from its node: settings and the budgets rooms share.
#[derive(Clone)]
pub struct Rules {
    /// The node's metrics.
    pub metrics: Arc<crate::metrics::Metrics>,
    pub config: Arc<NodeConfig>,
    pub limits: DocLimits,
    /// The node's memory budget: large welcomes and snapshots are promised from it.
    pub memory: Arc<MemoryGuard>,
    /// Node-wide allowance for welcomes bigger than a send queue.
    pub welcome_budget: Arc<Budget>,
    /// Bytes of documents sent to each client address: welcomes that carry one are
    /// charged to it, and wait while it is in debt.
    pub documents_sent: Arc<crate::limits::KeyedLimiter<std::net::IpAddr>>,
    /// What each owner's files keep in the store: a full owner's documents stop growing.
    pub storage: Arc<crate::storage::Storage>,
    /// What the patches from each client address may rewrite a second, in all files.
    pub rewrites: Arc<super::rewrites::AddressRewrites>,
}

/// Client ids a room remembers before it forgets those gone whose patches are all durable
/// (`RoomCore::forget_gone_clients`).
pub(super) const FORGET_CLIENTS_FROM: usize = 4096;

/// One open file's state: its document, its people, and what waits for the disk.
pub struct RoomCore {
    pub(super) file: FileId,
    pub(super) rules: Rules,
    pub(super) record: FileRecord,
    /// Whose storage what the room keeps is counted in ([`crate::storage::Storage::holder`]).
    pub(super) holder: Holder,
    pub(super) epoch: u64,
    pub(super) doc: Document,
    /// The last version applied in memory.
    pub(super) version: u64,
    /// The last version synced to disk.
    pub(super) durable: u64,
    pub(super) recent: RecentOps,
    /// The document as the last large welcome carried it, at which version, and when it
    /// was made: the welcomes of everyone who joins at that version soon after share it
    /// (while one of them holds it; see `RoomCore::shared_welcome_doc`).
    pub(super) welcome_doc: Option<(u64, Instant, std::sync::Weak<crate::ws::Middle>)>,
    /// Every client id that joined: its person, and its highest op (resends are acked, never
    /// applied twice). Those gone whose patches are all durable are forgotten once they are
    /// many ([`RoomCore::forget_gone_clients`]).
    pub(super) clients: HashMap<ClientKey, ClientState>,
    /// How many `clients` there may be before those gone are forgotten.
    pub(super) clients_mark: usize,
    /// When clients were last forgotten: a joiner's op id read from the store before then
    /// may be stale.
    pub(super) forgot_clients_at: Option<Instant>,
    /// What each client's person id is made from, with its client id
    /// ([`PersonId::of_client`]): random for each life of the room.
    pub(super) person_salt: [u8; 16],
    pub(super) participants: HashMap<ConnId, Participant>,
    /// People with edit access waiting for an editor seat, in arrival order.
    pub(super) waiting: VecDeque<ConnId>,
    pub(super) pending: VecDeque<Pending>,
    /// Accepted this turn, not yet handed to the journal.
    pub(super) unsent: Vec<LoggedPatch>,
    /// Handed to the journal: (last version, when, how many patches).
    pub(super) in_flight: VecDeque<(u64, Instant, usize)>,
    pub(super) board: presence::Board,
    /// The presence rate clients were last told (it drops in busy rooms).
    pub(super) presence_hz: u32,
    pub(super) snapshot: SnapshotState,
    pub(super) idle_since: Option<Instant>,
    /// Set once the room is finishing (shutdown or move): it takes nothing new
    /// and ends as soon as everything accepted is durable and delivered.
    pub(super) finishing: Option<Finishing>,
    /// People in the room, shared with its registry handle.
    pub(super) people: Arc<AtomicUsize>,
    /// Presence waiting for the tick, shared with its registry handle (the shell takes it
    /// at the tick; a join that replaces a socket takes that socket's first).
    pub(super) presences: Arc<super::registry::PresenceInbox>,
    /// Editors this room has added to the node's editor gauge.
    pub(super) editors_counted: i64,
    /// How long the oldest patch has waited for the store.
    pub(super) stall: super::stall::StallClock,
    /// Who edited since the last version, and since when.
    pub(super) history: super::versions::HistoryState,
    /// The restore being prepared off the room's task, and those waiting behind it.
    pub(super) restores: super::restore::state::RestoreState,
    /// Server API patches accepted lately (retries are answered from here).
    pub(super) server_ops: super::server::requests::ServerOps,
    /// Bytes of socket events the room may still relay (`ATRIUM_ROOM_EVENT_BYTES_PER_SECOND`).
    pub(super) event_bytes: crate::limits::Bucket,
    /// Each sending address's part of them.
    pub(super) event_senders: crate::limits::AddressQuarters,
    /// Bytes of stored nodes the room's patches may still rewrite ([`REWRITE_PER_SECOND`]).
    pub(super) rewrites: crate::limits::Bucket,
    effects: Vec<Effect>,
}

/// What a room starts from: the file as the store handed it over.
pub struct Opened {
    pub file: FileId,
    pub record: FileRecord,
    pub epoch: u64,
    pub doc: Document,
    pub version: u64,
    pub recent: RecentOps,
    /// When the file was taken from the store: a joiner's op id read before then is read
    /// again, as after a forgetting (the new room knows none of the file's clients).
    pub taken_at: Instant,
}

impl RoomCore {
    pub fn new(opened: Opened, rules: Rules, people: Arc<AtomicUsize>, now: Instant) -> Self {
        let presence_hz = rules.config.presence_hz;
        let server_ops = super::server::requests::ServerOps::new(rules.config.server_ops_kept);
        let event_rate = rules.config.room_event_bytes_per_second as f64;
        // At least one patch rewriting a whole document of the largest size passes.
        let rewrite_burst = REWRITE_BURST.max(rules.config.max_doc_bytes as f64);
        let event_bytes = crate::limits::Bucket::new(event_rate, event_rate, now);
        // The owner's storage (or the file's, for the app's files, where only the link's
        // guests are held to a share) is measured before the first patch asks about it.
        let holder = rules.storage.holder(&opened.record);
        rules.storage.may_grow(&holder, 0, Share::Link);
        Self {
            holder,
            file: opened.file,
            rules,
            record: opened.record,
            epoch: opened.epoch,
            doc: opened.doc,
            version: opened.version,
            durable: opened.version,
            recent: opened.recent,
            welcome_doc: None,
            clients: HashMap::new(),
            clients_mark: FORGET_CLIENTS_FROM,
            forgot_clients_at: Some(opened.taken_at),
            person_salt: rand::random(),
            participants: HashMap::new(),
            waiting: VecDeque::new(),
            pending: VecDeque::new(),
            unsent: Vec::new(),
            in_flight: VecDeque::new(),
            board: Default::default(),
            presence_hz,
            snapshot: SnapshotState::default(),
            idle_since: Some(now),
            finishing: None,
            people,
            presences: Arc::default(),
            editors_counted: 0,
            stall: Default::default(),
            history: Default::default(),
            restores: Default::default(),
            server_ops,
            event_bytes,
            event_senders: crate::limits::AddressQuarters::new(event_rate, event_rate),
            rewrites: crate::limits::Bucket::new(REWRITE_PER_SECOND, rewrite_burst, now),
            effects: Vec::new(),
        }
    }

    /// Serves one command; `Some` when the room must end.
    pub fn handle(&mut self, cmd: RoomCmd, now: Instant) -> Option<Exit> {
        match cmd {
            RoomCmd::Join(req, reply) => {
                let result = self.join(req, now);
                let _ = reply.send(result);
            }
            RoomCmd::Leave(conn) => self.leave(conn, now),
            RoomCmd::Patch(conn, patch, ticket) => self.patch(conn, patch, ticket, now),
            RoomCmd::Presence(conn, update) => self.board.update(conn, update, now),
            // Only a wake: the shell's tick takes what waits.
            RoomCmd::PresenceWaiting => {}
            RoomCmd::Appended(a) => return self.appended(a, now),
            RoomCmd::SnapshotDone(result) => return self.snapshot_done(result, now),
            RoomCmd::FileChanged(record) => self.file_changed(record, now),
            RoomCmd::Regrant { conn, grant, exp } => self.regrant(conn, grant, exp, now),
            RoomCmd::Deleted => return Some(Exit::Deleted),
            RoomCmd::GetDoc(reply) => {
                let doc = self.doc.to_json();
                self.after_durable(Pending::Doc {
                    v: self.version,
                    doc,
                    reply,
                });
            }
            RoomCmd::DocSize(reply) => {
                let _ = reply.send(self.doc.charged_len());
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
            RoomCmd::NameVersion(req) => self.name_version(req),
            RoomCmd::Restore(req) => self.restore(req),
            RoomCmd::RestorePrepared(prepared) => self.restore_prepared(prepared, now),
            RoomCmd::History(job) => self.history_job(job),
            RoomCmd::Announce(event, version) => self.announce(event, &version),
            RoomCmd::VersionDone(outcome) => self.version_done(outcome, now),
            RoomCmd::ServerPatch(req) => self.server_patch(req, now),
            RoomCmd::People(req) => {
                let _ = req.reply.send(self.people_now());
            }
            RoomCmd::Kick(target, reply) => {
                let n = self.kick(&target, "removed by the app's server", now);
                let _ = reply.send(n);
            }
            RoomCmd::Event(event) => self.event(event, now),
            // The lease is the shell's: it never reaches the core.
            RoomCmd::CheckLease => {}
        }
        None
    }

    /// What the shell must carry out, oldest first (the buffer is kept for the next turn).
    pub fn effects(&mut self) -> std::vec::Drain<'_, Effect> {
        self.effects.drain(..)
    }

    pub(super) fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    /// After every turn: the turn's patches go to the journal as one append.
    pub fn end_turn(&mut self, now: Instant) {
        if self.unsent.is_empty() {
            return;
        }
        let patches = std::mem::take(&mut self.unsent);
        let upto = patches.last().map_or(0, |p| p.version);
        self.in_flight.push_back((upto, now, patches.len()));
        self.effect(Effect::Append(FileAppend {
            file: self.file.clone(),
            epoch: self.epoch,
            patches,
        }));
    }

    /// Sends one encoded message to everyone in the room.
    pub(super) fn broadcast(&self, frame: Msg, kind: &str) {
        self.broadcast_to(frame, kind, |_| true);
    }

    /// Sends a history message (`version`, `restored`) to those in the room who may read the
    /// file's history: a viewer the HTTP API refuses must not hear titles, descriptions and
    /// editors' names on the socket (the fifteenth review).
    pub(super) fn broadcast_history(&self, frame: Msg, kind: &str) {
        self.broadcast_to(frame, kind, |m| {
            access::role(&self.record, m.access)
                .is_ok_and(|(role, _)| access::sees_history(role, &self.record))
        });
    }

    fn broadcast_to(&self, frame: Msg, kind: &str, to: impl Fn(&Participant) -> bool) {
        debug_assert!(atrium_protocol::SERVER_MESSAGES.contains(&kind), "{kind}");
        let mut sent = 0;
        for m in self.participants.values().filter(|m| to(m)) {
            m.outbox.send(frame.clone());
            sent += 1;
        }
        self.rules
            .metrics
            .messages_sent
            .with_label_values(&[kind])
            .inc_by(sent);
    }

    pub fn file(&self) -> &FileId {
        &self.file
    }
}
