//! The room's task: the shell around its core.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use atrium_coordinator::LeaseKeeper;

use super::core::RoomCore;
use super::exit::Exit;
use super::history::{self, HistoryJob};
use super::registry::{self, Opening, RoomMap};
use super::{load, JoinError, RoomCmd, RoomContext};
use crate::ids::FileId;

mod turn;

/// Housekeeping cadence: idle checks, time-based snapshots, store stalls.
const HOUSEKEEPING: Duration = Duration::from_secs(1);

/// How long a closing room waits for the versions it asked for to be saved.
const HISTORY_AT_CLOSE: Duration = Duration::from_secs(3);

/// The room's shell: one task around its [`RoomCore`], carrying out what the core
/// decides (journal appends, snapshots) and holding the file's lease.
pub struct Room {
    core: RoomCore,
    /// The file, for webhook events (the core's is borrowed while effects drain).
    file: FileId,
    generation: u64,
    ctx: Arc<RoomContext>,
    rooms: RoomMap,
    tx: mpsc::UnboundedSender<RoomCmd>,
    /// The file's lease, watched over in the background while the room lives.
    lease: Option<LeaseKeeper>,
    /// When the next presence tick may start.
    next_tick: tokio::time::Instant,
    /// The room's history worker: versions saved and deleted one at a time, in order.
    history: Option<mpsc::UnboundedSender<HistoryJob>>,
    /// The room's part of its account's and opening address's shares of memory, given
    /// back when the room ends.
    share: super::shares::RoomShare,
    /// `person.*` webhook events the room may still record
    /// (`ATRIUM_WEBHOOK_PERSON_EVENTS_PER_MINUTE`).
    person_events: crate::limits::Bucket,
    /// Each client address's part of them: a guest joining in a loop uses up a quarter,
    /// and the others' comings and goings are still told.
    person_senders: crate::limits::AddressQuarters,
}

impl Room {
    /// Runs a room until it ends: loads the file first (taking its epoch), then
    /// serves commands in turns.
    pub async fn run(
        Opening {
            file,
            generation,
            opener,
        }: Opening,
        ctx: Arc<RoomContext>,
        rooms: RoomMap,
        (tx, mut rx): (
            mpsc::UnboundedSender<RoomCmd>,
            mpsc::UnboundedReceiver<RoomCmd>,
        ),
        people: Arc<AtomicUsize>,
        serving: Arc<AtomicBool>,
        presences: Arc<super::registry::PresenceInbox>,
    ) {
        let mut loaded = match load::load(&file, ctx.clone(), people, opener).await {
            Ok(loaded) => loaded,
            Err(error) => {
                tracing::warn!(file = %file, ?error, "room could not open");
                registry::remove(&rooms, &file, generation);
                refuse_all(&mut rx, error);
                return;
            }
        };
        // A join that replaces a socket takes what that socket left for the tick.
        loaded.core.presences = presences.clone();
        let parts = history::WorkerParts {
            store: ctx.store.clone(),
            storage: ctx.rules.storage.clone(),
            rules: ctx.rules.config.history_rules(),
            metrics: ctx.rules.metrics.clone(),
        };
        let (history, history_task) = history::worker(parts, tx.clone());
        let person_rate = f64::from(ctx.rules.config.webhook_person_events_per_minute);
        let person_events =
            crate::limits::Bucket::new(person_rate / 60.0, person_rate, std::time::Instant::now());
        let person_senders = crate::limits::AddressQuarters::new(person_rate / 60.0, person_rate);
        let mut room = Room {
            core: loaded.core,
            file: file.clone(),
            generation,
            ctx,
            rooms,
            tx,
            lease: Some(loaded.lease),
            share: loaded.share,
            next_tick: tokio::time::Instant::now(),
            history: Some(history),
            person_events,
            person_senders,
        };
        let mut lease_lost = room.lease.as_ref().map(LeaseKeeper::lost);
        // The tick's timer and the lease watch are made once for the room's life: made
        // anew on every turn, each would be registered and dropped per command.
        let lost = lost(&mut lease_lost);
        let tick = tokio::time::sleep_until(room.next_tick);
        tokio::pin!(lost, tick);
        serving.store(true, Ordering::Release);
        room.ctx.rules.metrics.rooms.inc();
        room.webhook(
            "room.opened",
            serde_json::json!({"node": room.ctx.node.as_str()}),
        );
        let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut commands = Vec::with_capacity(64);
        let mut updates = Vec::new();
        let exit = loop {
            let exit = tokio::select! {
                n = rx.recv_many(&mut commands, 256) => {
                    if n == 0 {
                        break Exit::Shutdown;
                    }
                    room.turn(&mut commands)
                }
                _ = housekeeping.tick() => {
                    let share_wanted = room.share.wanted();
                    room.core.housekeeping(Instant::now(), share_wanted)
                }
                _ = &mut tick, if room.core.board.wants_tick()
                    || (presences.told() && !room.core.board.in_round()) => {
                    let now = Instant::now();
                    take_presence(&presences, &mut updates, &mut room.core, now);
                    if room.core.board.wants_tick() {
                        room.core.presence_tick(now);
                        room.next_tick = tokio::time::Instant::now() + room.core.tick_period();
                        tick.as_mut().reset(room.next_tick);
                    }
                    None
                }
                _ = std::future::ready(()), if room.core.board.in_round() => {
                    room.core.serve_presence_slice(Instant::now());
                    None
                }
                _ = &mut lost => {
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
        // A room that ends after edits saves a version of them, and every version asked
        // for is written, while the room still holds the file (the writes are fenced).
        if matches!(exit, Exit::Idle | Exit::Shutdown | Exit::Moved) {
            if let (Some(job), Some(history)) = (room.core.closing_version(), &room.history) {
                let _ = history.send(job);
            }
        }
        room.history = None;
        if tokio::time::timeout(HISTORY_AT_CLOSE, history_task)
            .await
            .is_err()
        {
            tracing::warn!(file = %room.core.file(), "versions still being saved as the room closes");
        }
        // After the room's last version, so `version.created` comes before it.
        room.webhook(
            "room.closed",
            serde_json::json!({"node": room.ctx.node.as_str(), "reason": exit.reason()}),
        );
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
}

impl Room {
    /// Queues a webhook event of this room's file (never waits).
    fn webhook(&self, kind: &'static str, data: serde_json::Value) {
        let event =
            crate::webhook::event::event(self.core.file(), kind, crate::clock::unix_ms(), data);
        self.ctx.webhooks.emit(event);
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

/// Applies every presence update waiting in the room's inbox to its board.
fn take_presence(
    presences: &super::registry::PresenceInbox,
    updates: &mut Vec<(crate::outbox::ConnId, crate::protocol::PresenceUpdate)>,
    core: &mut RoomCore,
    now: Instant,
) {
    presences.take(updates);
    for (conn, update) in updates.drain(..) {
        core.board.update(conn, update, now);
    }
    updates.shrink_to(64);
}
