//! Snapshots, written off the relay path (invariant 5 in docs/architecture.md).
//!
//! The room only decides when: once the log behind the last snapshot passes
//! max(`ATRIUM_SNAPSHOT_BYTES`, a quarter of the document), or it has changed for
//! `ATRIUM_SNAPSHOT_MS`. A background task then rebuilds the document from the
//! stored snapshot and log (never touching the room's copy), writes it fenced by
//! the room's epoch, and trims the log to the recent operations behind it.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::core::{Effect, Exit, RoomCore};
use super::RoomCmd;
use crate::doc::{parse_ops, DocLimits, Document};
use crate::ids::FileId;
use crate::memory::Reservation;
use crate::store::{LoggedPatch, Store, StoreError};

#[derive(Default)]
pub struct SnapshotState {
    /// Bytes of ops logged since the last snapshot.
    log_bytes: usize,
    /// When the first of those was logged.
    dirty_since: Option<Instant>,
    /// When the snapshot under way started, and the log bytes it covers.
    started: Option<(Instant, usize)>,
    /// When the last snapshot failed: the next waits `ATRIUM_SNAPSHOT_MS` from then.
    failed_at: Option<Instant>,
}

impl SnapshotState {
    pub fn logged(&mut self, bytes: usize, now: Instant) {
        self.log_bytes += bytes;
        self.dirty_since.get_or_insert(now);
    }

    pub fn in_flight(&self) -> bool {
        self.started.is_some()
    }
}

/// Limits for replaying what was already accepted: stored data is never refused.
pub fn replay_limits() -> DocLimits {
    DocLimits {
        max_ops: usize::MAX,
        max_doc_bytes: usize::MAX,
        ..DocLimits::default()
    }
}

/// Applies logged patches on top of `doc`, returning the last version applied.
pub fn replay(doc: &mut Document, log: &[LoggedPatch], after: u64) -> u64 {
    let limits = replay_limits();
    let mut version = after;
    for p in log.iter().filter(|p| p.version > after) {
        let ops = serde_json::from_str(&p.ops)
            .ok()
            .and_then(|v| parse_ops(&v, &limits).ok())
            .unwrap_or_default();
        if let Err(e) = doc.apply(&ops, &limits) {
            tracing::error!(version = p.version, error = %e, "a logged patch no longer applies");
        }
        version = p.version;
    }
    version
}

/// A snapshot the core has decided on, for the shell to write.
pub struct SnapshotJob {
    pub file: FileId,
    /// The room's epoch: the write is fenced by it.
    pub epoch: u64,
    /// Logged operations kept behind the snapshot (for resumes).
    pub keep: u64,
    /// The rebuild's memory, promised from the budget until the job ends.
    pub reservation: Reservation,
}

impl RoomCore {
    pub(super) fn maybe_snapshot(&mut self, now: Instant) {
        let s = &self.snapshot;
        if s.in_flight() || s.log_bytes == 0 || self.durable == 0 {
            return;
        }
        let config = &self.rules.config;
        let since = |t: Instant| now.saturating_duration_since(t);
        if s.failed_at
            .is_some_and(|t| since(t) < config.snapshot_interval())
        {
            return;
        }
        let by_size = s.log_bytes >= config.snapshot_bytes.max(self.doc.serialized_len() / 4);
        let by_time = s
            .dirty_since
            .is_some_and(|t| since(t) >= config.snapshot_interval());
        if !(by_size || by_time) || self.in_flight.len() > 1 {
            return;
        }
        // A snapshot rebuilds the document from the store and serializes it, off the
        // relay path but in this process: promised from the memory budget first, or
        // put off to a later turn (the log keeps everything meanwhile).
        let cost = self.doc.serialized_len() as u64 * crate::doc::BUILD_BYTES_PER_JSON_BYTE as u64;
        let Some(reservation) = self.rules.memory.reserve(cost) else {
            return;
        };
        self.snapshot.started = Some((now, self.snapshot.log_bytes));
        self.snapshot.log_bytes = 0;
        self.snapshot.dirty_since = None;
        self.effect(Effect::Snapshot(SnapshotJob {
            file: self.file.clone(),
            epoch: self.epoch,
            keep: self.rules.config.room_ops as u64,
            reservation,
        }));
    }

    pub(super) fn snapshot_done(
        &mut self,
        result: Result<u64, StoreError>,
        now: Instant,
    ) -> Option<Exit> {
        // A result with no snapshot under way (none is ever sent) changes nothing.
        let (started, covered) = self.snapshot.started.take()?;
        match result {
            Ok(version) => {
                self.snapshot.failed_at = None;
                self.rules.metrics.snapshots.inc();
                self.rules
                    .metrics
                    .snapshot_seconds
                    .observe(now.saturating_duration_since(started).as_secs_f64());
                tracing::debug!(file = %self.file, version, "snapshot written");
                None
            }
            Err(StoreError::Fenced) => Some(Exit::Fenced),
            Err(StoreError::NotFound) => Some(Exit::Deleted),
            Err(e) => {
                // Nothing is lost: the log still holds everything. Try again once
                // `ATRIUM_SNAPSHOT_MS` has passed, whether or not more is logged.
                tracing::warn!(file = %self.file, error = %e, "snapshot failed");
                self.snapshot.log_bytes += covered;
                self.snapshot.dirty_since.get_or_insert(now);
                self.snapshot.failed_at = Some(now);
                None
            }
        }
    }
}

/// Writes a snapshot in the background: the document is rebuilt from the store's
/// snapshot and log (never from the room's copy), written fenced by the room's
/// epoch, and the result goes back to the room as `SnapshotDone`.
pub fn spawn(
    job: SnapshotJob,
    store: Arc<dyn Store>,
    metrics: Arc<crate::metrics::Metrics>,
    room: mpsc::UnboundedSender<RoomCmd>,
) {
    tokio::spawn(async move {
        let SnapshotJob {
            file,
            epoch,
            keep,
            reservation,
        } = job;
        let result = async {
            let (base, log) = store.snapshot_and_tail(&file).await?;
            let size = base.as_ref().map_or(0, |(_, json)| json.len())
                + log.iter().map(|p| p.ops.len()).sum::<usize>();
            let (version, doc) = crate::lane::run(size, &metrics, move || {
                let limits = replay_limits();
                let (after, mut doc) = match base {
                    Some((v, json)) => (
                        v,
                        Document::from_json(json.as_bytes(), &limits).unwrap_or_default(),
                    ),
                    None => (0, Document::new()),
                };
                let version = replay(&mut doc, &log, after);
                (version, doc.to_json())
            })
            .await;
            store
                .write_snapshot(&file, epoch, version, &doc, keep)
                .await?;
            Ok(version)
        }
        .await;
        drop(reservation);
        let _ = room.send(RoomCmd::SnapshotDone(result));
    });
}
