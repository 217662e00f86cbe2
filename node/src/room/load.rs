//! Opening a room: take the file (its epoch raised first), then rebuild the
//! document from the snapshot and the log, and refill the recent operations.

use atrium_protocol::CloseCode;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Instant;

use super::core::{Opened, RoomCore};
use super::recent::{RecentOp, RecentOps};
use super::shares::{Opener, RoomShare};
use super::snapshot::{replay, replay_limits};
use super::{JoinError, RoomContext};
use crate::doc::Document;
use crate::ids::FileId;
use crate::outbox::shared;
use crate::protocol;
use crate::store::{StoreError, TakenFile};
use atrium_coordinator::{CoordinatorError, LeaseKeeper};

/// A room just opened: its core, the file's lease, and its part of its account's and
/// opening address's shares of memory.
pub struct Loaded {
    pub core: RoomCore,
    pub lease: LeaseKeeper,
    pub share: RoomShare,
}

/// Opens a file's room: the lease first, then the store's epoch, then the data.
/// `opener`: who opens it (the client address and account of the join or download).
pub async fn load(
    file: &FileId,
    ctx: Arc<RoomContext>,
    people: Arc<AtomicUsize>,
    opener: Opener,
) -> Result<Loaded, JoinError> {
    let (config, memory, metrics) = (&ctx.rules.config, &ctx.rules.memory, &ctx.rules.metrics);
    // A file last seen too large for what the budget has left is refused before its
    // lease is taken and its document read: joiners that retry it cost a lookup each.
    let known = ctx.load_costs.get(file).unwrap_or(0);
    if !memory.admits() || !memory.fits(known) {
        metrics.memory_refusals.inc();
        return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
    }
    let lease = match ctx.coordinator.acquire(file.as_str(), &ctx.node).await {
        Ok(lease) => lease,
        // Another node serves the file: the client goes back through the router.
        Err(CoordinatorError::Held { .. }) => return Err(JoinError::Unavailable(CloseCode::Moved)),
        Err(e) => {
            tracing::warn!(file = %file, error = %e, "coordinator refused the lease");
            return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
        }
    };
    let keeper = LeaseKeeper::start(
        ctx.coordinator.clone(),
        lease,
        config.coordinator_settings(),
    );
    // The patches before the snapshot are only for resume: no more of them than the recent
    // operations hold, by count and by bytes, however large the ones the log kept.
    let (behind, behind_bytes) = (config.room_ops as u64, config.room_ops_bytes as u64);
    // Op ids read from the store before this may miss a patch the file's last room (here
    // or on another node) made durable just before it let the file go.
    let taken_at = Instant::now();
    let taken = match ctx.store.take_file_within(file, behind, behind_bytes).await {
        Ok(taken) => taken,
        Err(e) => {
            let _ = keeper.release().await;
            return Err(match e {
                StoreError::NotFound => JoinError::NotFound,
                StoreError::Fenced => JoinError::Unavailable(CloseCode::Moved),
                _ => JoinError::Unavailable(CloseCode::TryAgainLater),
            });
        }
    };
    // The document is about to be built in memory: promise its bytes first, so a
    // burst of loads cannot take the node past its budget before a sample shows it.
    let cost = load_cost(&taken);
    ctx.load_costs.note(file, cost);
    let mut share = match ctx.shares.take(&taken.record.owner, &opener, cost) {
        Ok(share) => share,
        Err(over) => {
            tracing::debug!(file = %file, ?over, "room over its share of memory");
            metrics.memory_refusals.inc();
            let _ = keeper.release().await;
            return Err(JoinError::OverShare(over));
        }
    };
    let loading = match memory.reserve(cost) {
        Some(r) => r,
        None => {
            metrics.memory_refusals.inc();
            let _ = keeper.release().await;
            return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
        }
    };
    loading.hold_until_sampled();
    // A lease that lapsed while nobody else took the file (the node's membership lapsed in a
    // coordinator outage longer than the lease) is taken back, as long as the store says
    // the epoch is still ours.
    let (store, id, epoch) = (ctx.store.clone(), file.clone(), taken.epoch);
    keeper.retake_when(Arc::new(move || {
        let (store, id) = (store.clone(), id.clone());
        Box::pin(async move { store.epoch(&id).await.is_ok_and(|e| e == epoch) })
    }));
    // Built on the bulk lane when large, with the log replayed on top.
    let snapshot = taken.snapshot;
    let log = Arc::new(taken.log);
    let size = snapshot.as_ref().map_or(0, |(_, json)| json.len())
        + log.iter().map(|p| p.ops.len()).sum::<usize>();
    let built = crate::lane::run(size, metrics, {
        let log = log.clone();
        move || {
            let (base, mut doc) = match snapshot {
                Some((v, json)) => (v, Document::from_json(json.as_bytes(), &replay_limits())?),
                None => (0, Document::new()),
            };
            let version = replay(&mut doc, &log, base);
            Ok::<_, crate::doc::PatchError>((version, doc))
        }
    })
    .await;
    let (version, doc) = match built {
        Ok(built) => built,
        Err(e) => {
            tracing::error!(file = %file, error = %e, "snapshot is unreadable");
            let _ = keeper.release().await;
            return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
        }
    };
    // A document of tiny nodes holds more than its estimate: what it holds counts against
    // the shares, and judges the file's next load.
    let counted = (doc.charged_len() * crate::doc::HELD_BYTES_PER_COUNTED_BYTE) as u64;
    let held = cost.max(counted + ROOM_BYTES);
    if held > cost {
        share.grow_to(held);
        ctx.load_costs.note(file, held);
    }
    let mut recent = RecentOps::new(config.room_ops, config.room_ops_bytes);
    for p in log.iter() {
        recent.push(RecentOp {
            v: p.version,
            client: p.client,
            op_id: p.op_id,
            t: p.t.clone(),
            relay: shared(protocol::relay(p.version, &p.by, &p.ops, p.t.as_deref())),
        });
    }
    tracing::debug!(file = %file, epoch = taken.epoch, version, "room loaded");
    let opened = Opened {
        file: file.clone(),
        record: taken.record,
        epoch: taken.epoch,
        doc,
        version,
        recent,
        taken_at,
    };
    let rules = ctx.rules.clone();
    Ok(Loaded {
        core: RoomCore::new(opened, rules, people, Instant::now()),
        lease: keeper,
        share,
    })
}

/// What loading each recently opened file cost (see [`load_cost`]), so a file too
/// large for the memory left is refused without reading it again. Bounded: past
/// [`LoadCosts::MAX`] files, the oldest entry is forgotten.
#[derive(Default)]
pub struct LoadCosts {
    inner: std::sync::Mutex<(HashMap<FileId, u64>, VecDeque<FileId>)>,
}

impl LoadCosts {
    const MAX: usize = 4096;

    pub fn get(&self, file: &FileId) -> Option<u64> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.0.get(file).copied()
    }

    pub fn note(&self, file: &FileId, cost: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (costs, order) = &mut *inner;
        if costs.insert(file.clone(), cost).is_none() {
            order.push_back(file.clone());
            while order.len() > Self::MAX {
                if let Some(oldest) = order.pop_front() {
                    costs.remove(&oldest);
                }
            }
        }
    }
}

/// What an open room takes whatever its document: its task, queues, lease, board and
/// maps (about 23 KiB a room measured on a debug build, 200 empty rooms; the twelfth review
/// found rooms of empty files estimated at nothing, so one address could open them by the
/// thousand outside every share).
pub const ROOM_BYTES: u64 = 32 * 1024;

/// Memory a loaded file is expected to take, in bytes: its document (a few times
/// its JSON while it is built) and its recent operations (the log's patches, and their
/// relay frames), plus [`ROOM_BYTES`] for the room itself.
fn load_cost(taken: &TakenFile) -> u64 {
    let snapshot = taken.snapshot.as_ref().map_or(0, |(_, json)| json.len());
    let log: usize = taken.log.iter().map(|p| p.ops.len() * 2 + 128).sum();
    let document = (snapshot * crate::doc::BUILD_BYTES_PER_JSON_BYTE + log) as u64;
    document + ROOM_BYTES
}
