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

use atrium_protocol::CloseCode;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::participant::{ClientState, Participant};
use super::pending::Pending;
use super::recent::RecentOps;
use super::snapshot::{SnapshotJob, SnapshotState};
use super::{presence, RoomCmd};
use crate::config::NodeConfig;
use crate::doc::{DocLimits, Document};
use crate::ids::{ClientKey, FileId};
use crate::memory::MemoryGuard;
use crate::outbox::{shared, Budget, ConnId, Msg};
use crate::protocol;
use crate::store::{FileAppend, FileRecord, LoggedPatch};

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
}

/// What the shell carries out for the core.
pub enum Effect {
    /// Make this turn's patches durable; the result comes back as `Appended`.
    Append(FileAppend),
    /// Rebuild and write a snapshot; the result comes back as `SnapshotDone`.
    Snapshot(SnapshotJob),
}

/// How a room ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Idle,
    Shutdown,
    /// Handed over to the file's new ring owner.
    Moved,
    Deleted,
    /// The coordinator lease lapsed or went to another node.
    LeaseLost,
    /// A durable write was refused by the store's epoch fence: another node took the file.
    Fenced,
}

impl Exit {
    /// The `reason` label of `atrium_room_exits_total`.
    pub fn reason(self) -> &'static str {
        match self {
            Exit::Idle => "idle",
            Exit::Shutdown => "shutdown",
            Exit::Moved => "moved",
            Exit::Deleted => "deleted",
            Exit::LeaseLost => "lease-lost",
            Exit::Fenced => "fenced",
        }
    }

    /// What everyone still in the room is told as it ends.
    fn close(self) -> Option<(CloseCode, &'static str)> {
        match self {
            Exit::Deleted => Some((CloseCode::NotFound, "file deleted")),
            Exit::Fenced | Exit::LeaseLost | Exit::Moved => {
                Some((CloseCode::Moved, "moved: this node no longer owns the file"))
            }
            Exit::Shutdown => Some((CloseCode::ServiceRestart, "server restarting")),
            Exit::Idle => None,
        }
    }
}

pub(super) struct Finishing {
    pub(super) exit: Exit,
    pub(super) reply: Option<tokio::sync::oneshot::Sender<()>>,
}

/// One open file's state: its document, its people, and what waits for the disk.
pub struct RoomCore {
    pub(super) file: FileId,
    pub(super) rules: Rules,
    pub(super) record: FileRecord,
    pub(super) epoch: u64,
    pub(super) doc: Document,
    /// The last version applied in memory.
    pub(super) version: u64,
    /// The last version synced to disk.
    pub(super) durable: u64,
    pub(super) recent: RecentOps,
    pub(super) clients: HashMap<ClientKey, ClientState>,
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
    /// Editors this room has added to the node's editor gauge.
    pub(super) editors_counted: i64,
    /// Whether this store stall was announced already.
    pub(super) stall_noticed: bool,
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
}

impl RoomCore {
    pub fn new(opened: Opened, rules: Rules, people: Arc<AtomicUsize>, now: Instant) -> Self {
        let presence_hz = rules.config.presence_hz;
        Self {
            file: opened.file,
            rules,
            record: opened.record,
            epoch: opened.epoch,
            doc: opened.doc,
            version: opened.version,
            durable: opened.version,
            recent: opened.recent,
            clients: HashMap::new(),
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
            editors_counted: 0,
            stall_noticed: false,
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
            RoomCmd::Patch(conn, patch, _ticket) => self.patch(conn, patch, now),
            RoomCmd::Presence(conn, update) => self.board.update(conn, update, now),
            RoomCmd::Appended(a) => return self.appended(a, now),
            RoomCmd::SnapshotDone(result) => return self.snapshot_done(result, now),
            RoomCmd::FileChanged(record) => self.file_changed(record, now),
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
        debug_assert!(atrium_protocol::SERVER_MESSAGES.contains(&kind), "{kind}");
        for m in self.participants.values() {
            m.outbox.send(frame.clone());
        }
        self.rules
            .metrics
            .messages_sent
            .with_label_values(&[kind])
            .inc_by(self.participants.len() as u64);
    }

    /// Once a second: snapshots due by time, store stalls, and idleness.
    pub fn housekeeping(&mut self, now: Instant) -> Option<Exit> {
        self.maybe_snapshot(now);
        self.check_store_stall(now);
        let idle = self.idle_since.is_some_and(|since| {
            now.saturating_duration_since(since) >= self.rules.config.room_idle()
        });
        (idle && self.saved() && self.participants.is_empty() && !self.snapshot.in_flight())
            .then_some(Exit::Idle)
    }

    /// Everything accepted is durable and delivered.
    fn saved(&self) -> bool {
        self.pending.is_empty() && self.in_flight.is_empty() && self.unsent.is_empty()
    }

    /// While the store cannot make patches durable, they wait (unacked): after
    /// [`STALL_NOTICE`] everyone hears a 503 notice; after [`STALL_CLOSE`] sockets
    /// close with 1013, so clients back off and resend what is unconfirmed. The
    /// journal keeps retrying; nothing accepted is dropped.
    fn check_store_stall(&mut self, now: Instant) {
        let Some((_, since, _)) = self.in_flight.front() else {
            self.stall_noticed = false;
            return;
        };
        let waited = now.saturating_duration_since(*since);
        if waited >= STALL_CLOSE {
            for m in self.participants.values() {
                m.outbox.close(
                    CloseCode::TryAgainLater,
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
    pub fn maybe_finish(&self) -> Option<Exit> {
        self.finishing
            .as_ref()
            .filter(|_| self.saved())
            .map(|f| f.exit)
    }

    /// The presence tick: starts a round when one is due.
    pub fn presence_tick(&mut self, now: Instant) {
        let period = self.tick_period();
        self.board.start_round(period, now, &self.rules.metrics);
    }

    /// Serves the next slice of a presence round.
    pub fn serve_presence_slice(&mut self, now: Instant) {
        self.board.serve_slice(now, &self.rules.metrics);
    }

    /// The room has ended with `exit`: everyone still in it is told, counts drop
    /// to zero, and whoever waited for the end hears of it.
    pub fn close_everyone(&mut self, exit: Exit) {
        self.rules
            .metrics
            .people
            .sub(self.participants.len() as i64);
        if let Some((code, reason)) = exit.close() {
            for m in self.participants.values() {
                m.outbox.close(code, reason);
            }
        }
        self.participants.clear();
        self.sync_counts();
        if let Some(reply) = self.finishing.take().and_then(|f| f.reply) {
            let _ = reply.send(());
        }
    }

    pub fn file(&self) -> &FileId {
        &self.file
    }
}

#[cfg(test)]
#[test]
fn every_exit_reason_is_exported_at_zero() {
    let all = [
        Exit::Idle,
        Exit::Shutdown,
        Exit::Moved,
        Exit::Deleted,
        Exit::LeaseLost,
        Exit::Fenced,
    ];
    for exit in all {
        assert!(crate::metrics::ROOM_EXIT_REASONS.contains(&exit.reason()));
    }
}
