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
//!
//! The decisions live in [`RoomCore`](self::core::RoomCore), which has no I/O and
//! no clock: the task here (the shell) feeds it commands and the time, and carries
//! out the effects it returns (journal appends, snapshots), so every rule can be
//! unit-tested without a socket or a store (`room/tests/`).

pub mod access;
mod compaction;
pub mod core;
mod edits;
mod load;
mod participant;
mod pending;
mod people;
mod presence;
pub mod recent;
pub mod registry;
mod seats;
mod snapshot;
#[cfg(test)]
mod tests;

use atrium_protocol::CloseCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use atrium_coordinator::{Coordinator, LeaseKeeper, NodeId};

use self::core::{Effect, Exit, RoomCore, Rules};
use crate::ids::{AccountId, ClientKey, FileId, PersonId};
use crate::journal::{Appended, Journal, JournalEntry};
use crate::outbox::{ConnId, Outbox};
use crate::protocol::{Patch, PresenceUpdate};
use crate::store::{FileRecord, Store, StoreError};
use access::{Denied, Role};
use registry::RoomMap;

/// What rooms share: settings, the store, the journal and the coordinator.
pub struct RoomContext {
    /// What every room's core decides by: settings, limits, budgets, metrics.
    pub rules: Rules,
    pub store: Arc<dyn Store>,
    pub journal: Journal,
    pub coordinator: Arc<dyn Coordinator>,
    pub node: NodeId,
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
    /// Another node was seen taking the file's lease: the shell has its lease checked
    /// at once (a lost lease ends the room with 4009).
    CheckLease,
}

/// Housekeeping cadence: idle checks, time-based snapshots, store stalls.
const HOUSEKEEPING: Duration = Duration::from_secs(1);

/// The room's shell: one task around its [`RoomCore`], carrying out what the core
/// decides (journal appends, snapshots) and holding the file's lease.
pub struct Room {
    core: RoomCore,
    generation: u64,
    ctx: Arc<RoomContext>,
    rooms: RoomMap,
    tx: mpsc::UnboundedSender<RoomCmd>,
    /// The file's lease, watched over in the background while the room lives.
    lease: Option<LeaseKeeper>,
    /// When the next presence tick may start.
    next_tick: tokio::time::Instant,
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
        let (core, lease) = match load::load(&file, ctx.clone(), people).await {
            Ok(loaded) => loaded,
            Err(error) => {
                tracing::warn!(file = %file, ?error, "room could not open");
                registry::remove(&rooms, &file, generation);
                refuse_all(&mut rx, error);
                return;
            }
        };
        let mut room = Room {
            core,
            generation,
            ctx,
            rooms,
            tx,
            lease: Some(lease),
            next_tick: tokio::time::Instant::now(),
        };
        let mut lease_lost = room.lease.as_ref().map(LeaseKeeper::lost);
        serving.store(true, Ordering::Release);
        room.ctx.rules.metrics.rooms.inc();
        let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut commands = Vec::with_capacity(64);
        let exit = loop {
            let exit = tokio::select! {
                n = rx.recv_many(&mut commands, 256) => {
                    if n == 0 {
                        break Exit::Shutdown;
                    }
                    room.turn(&mut commands)
                }
                _ = housekeeping.tick() => room.core.housekeeping(Instant::now()),
                _ = tokio::time::sleep_until(room.next_tick), if room.core.board.wants_tick() => {
                    room.core.presence_tick(Instant::now());
                    room.next_tick = tokio::time::Instant::now() + room.core.tick_period();
                    None
                }
                _ = std::future::ready(()), if room.core.board.in_round() => {
                    room.core.serve_presence_slice(Instant::now());
                    None
                }
                _ = lost(&mut lease_lost) => {
                    tracing::warn!(file = %room.core.file(), "lease lost; closing the room");
                    Some(Exit::LeaseLost)
                }
            };
            room.carry_out();
            if let Some(e) = exit.or_else(|| room.core.maybe_finish()) {
                break e;
            }
        };
        tracing::debug!(file = %room.core.file(), ?exit, "room ends");
        serving.store(false, Ordering::Release);
        room.ctx.rules.metrics.rooms.dec();
        room.ctx
            .rules
            .metrics
            .room_exits
            .with_label_values(&[exit.reason()])
            .inc();
        // The lease goes first: a client told to come back (4009, 1012) may reach
        // the successor at once, and must not find the file still held here.
        if let Some(keeper) = room.lease.take() {
            if let Err(e) = keeper.release().await {
                tracing::debug!(file = %room.core.file(), error = %e,
                    "lease release failed; it stays ours until the room opens again or the node's membership ends");
            }
        }
        // Only then may this node open the file again: a room opened while the release was
        // on its way would take the lease as already its own (same epoch), and the release
        // would then free it from under the new room.
        registry::remove(&room.rooms, room.core.file(), room.generation);
        room.core.close_everyone(exit);
        // Whoever raced the registry removal is told to ask again.
        rx.close();
        refuse_all(&mut rx, JoinError::Retry);
    }

    /// One turn: the commands that arrived together, then their patches to the journal.
    fn turn(&mut self, commands: &mut Vec<RoomCmd>) -> Option<Exit> {
        // One reading of the clock for the turn: its commands arrived together.
        let now = Instant::now();
        let mut exit = None;
        for cmd in commands.drain(..) {
            if let RoomCmd::CheckLease = cmd {
                if let Some(keeper) = &self.lease {
                    keeper.check_now();
                }
                continue;
            }
            exit = self.core.handle(cmd, now);
            if exit.is_some() {
                break;
            }
        }
        if exit.is_none() {
            self.core.end_turn(now);
        }
        exit
    }

    /// Carries out what the core decided.
    fn carry_out(&mut self) {
        for effect in self.core.effects() {
            match effect {
                Effect::Append(append) => {
                    let tx = self.tx.clone();
                    let submitted = self.ctx.journal.submit(JournalEntry {
                        append,
                        done: Box::new(move |a| {
                            let _ = tx.send(RoomCmd::Appended(a));
                        }),
                    });
                    if !submitted {
                        // The journal only stops with the node: every room is in the same place.
                        tracing::error!("journal stopped; patches stay unacked");
                    }
                }
                Effect::Snapshot(job) => {
                    snapshot::spawn(
                        job,
                        self.ctx.store.clone(),
                        self.ctx.rules.metrics.clone(),
                        self.tx.clone(),
                    );
                }
            }
        }
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
