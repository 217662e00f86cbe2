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
mod edits;
mod load;
mod people;
mod presence;
pub mod recent;
pub mod registry;
mod seats;
mod snapshot;

use atrium_protocol::CloseCode;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use atrium_coordinator::{Coordinator, LeaseKeeper, NodeId};

use crate::config::NodeConfig;
use crate::doc::{DocLimits, Document};
use crate::ids::{AccountId, ClientKey, FileId, PersonId};
use crate::journal::{Appended, Journal};
use crate::metrics::metrics;
use crate::outbox::{shared, Budget, ConnId, Msg, Outbox};
use crate::protocol::{self, Patch, PresenceUpdate};
use crate::store::{FileRecord, LoggedPatch, Store, StoreError};
use access::{Denied, Role};
use edits::Pending;
use people::{ClientState, Participant};
use recent::RecentOps;
use registry::RoomMap;

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
    /// The node's memory budget: a room is not loaded where it has no room.
    pub memory: Arc<crate::memory::MemoryGuard>,
    /// What loading each recent file cost, to refuse one too large without reading it.
    pub load_costs: load::LoadCosts,
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
    /// Where the room tells the socket its role.
    pub seat: access::Seat,
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
    Unavailable(CloseCode),
}

impl JoinError {
    pub fn reason(self) -> &'static str {
        match self {
            JoinError::Denied(Denied::Unauthorized) => "not signed in, or a bad key",
            JoinError::Denied(Denied::Forbidden) => "no access to this file",
            JoinError::NotFound => "file not found",
            JoinError::Full => "the file is full",
            JoinError::Retry | JoinError::Unavailable(CloseCode::TryAgainLater) => {
                "try again later"
            }
            JoinError::Unavailable(CloseCode::Moved) => "moved: another node serves this file",
            JoinError::Unavailable(_) => "server restarting",
        }
    }

    pub fn close_code(self) -> CloseCode {
        match self {
            JoinError::Denied(d) => d.close_code(),
            JoinError::NotFound => CloseCode::NotFound,
            JoinError::Full => CloseCode::FileFull,
            JoinError::Retry => CloseCode::TryAgainLater,
            JoinError::Unavailable(code) => code,
        }
    }
}

pub enum RoomCmd {
    Join(JoinRequest, oneshot::Sender<Result<Joined, JoinError>>),
    Leave(ConnId),
    /// A patch, with its place in the room's bounded queue.
    Patch(ConnId, Patch, registry::Ticket),
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
    recent: RecentOps,
    clients: HashMap<ClientKey, ClientState>,
    participants: HashMap<ConnId, Participant>,
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
    /// The coordinator lease lapsed or went to another node.
    LeaseLost,
    /// A durable write was refused by the store's epoch fence: another node took the file.
    Fenced,
}

impl Exit {
    /// The `reason` label of `atrium_room_exits_total`.
    fn reason(self) -> &'static str {
        match self {
            Exit::Idle => "idle",
            Exit::Shutdown => "shutdown",
            Exit::Moved => "moved",
            Exit::Deleted => "deleted",
            Exit::LeaseLost => "lease-lost",
            Exit::Fenced => "fenced",
        }
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
        serving: Arc<AtomicBool>,
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
        serving.store(true, Ordering::Release);
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
                    break Exit::LeaseLost;
                }
            }
            if let Some(e) = room.maybe_finish() {
                break e;
            }
        };
        tracing::debug!(file = %room.file, ?exit, "room ends");
        serving.store(false, Ordering::Release);
        registry::remove(&room.rooms, &room.file, room.generation);
        metrics().rooms.dec();
        metrics()
            .room_exits
            .with_label_values(&[exit.reason()])
            .inc();
        metrics().people.sub(room.participants.len() as i64);
        let code = match exit {
            Exit::Deleted => Some((CloseCode::NotFound, "file deleted")),
            Exit::Fenced | Exit::LeaseLost | Exit::Moved => {
                Some((CloseCode::Moved, "moved: this node no longer owns the file"))
            }
            Exit::Shutdown => Some((CloseCode::ServiceRestart, "server restarting")),
            Exit::Idle => None,
        };
        // The lease goes first: a client told to come back (4009, 1012) may reach
        // the successor at once, and must not find the file still held here.
        if let Some(keeper) = room.lease.take() {
            if let Err(e) = keeper.release().await {
                tracing::debug!(file = %room.file, error = %e, "lease release failed; it will lapse");
            }
        }
        if let Some((code, reason)) = code {
            for m in room.participants.values() {
                m.outbox.close(code, reason);
            }
        }
        room.participants.clear();
        room.sync_counts();
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
            RoomCmd::Patch(conn, patch, _ticket) => self.patch(conn, patch),
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

    /// Sends one encoded message to everyone in the room.
    fn broadcast(&self, frame: Msg, kind: &str) {
        debug_assert!(atrium_protocol::SERVER_MESSAGES.contains(&kind), "{kind}");
        for m in self.participants.values() {
            m.outbox.send(frame.clone());
        }
        metrics()
            .messages_sent
            .with_label_values(&[kind])
            .inc_by(self.participants.len() as u64);
    }

    fn housekeeping(&mut self) -> Option<Exit> {
        self.maybe_snapshot();
        self.check_store_stall();
        let idle = self
            .idle_since
            .is_some_and(|since| since.elapsed() >= self.ctx.config.room_idle());
        let saved = self.pending.is_empty() && self.in_flight.is_empty() && self.unsent.is_empty();
        (idle && saved && self.participants.is_empty() && !self.snapshot.in_flight())
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
