//! Snapshots, written off the relay path (invariant 5 in docs/architecture.md).
//!
//! The room only decides when: once the log behind the last snapshot passes
//! max(`ATRIUM_SNAPSHOT_BYTES`, a quarter of the document), or it has changed for
//! `ATRIUM_SNAPSHOT_MS`. A background task then rebuilds the document from the
//! stored snapshot and log (never touching the room's copy), writes it fenced by
//! the room's epoch, and trims the log to the recent operations behind it.

use std::time::Instant;

use super::{Exit, Room, RoomCmd};
use crate::doc::{parse_ops, DocLimits, Document};
use crate::metrics::metrics;
use crate::store::{LoggedPatch, StoreError};

#[derive(Default)]
pub struct SnapshotState {
    /// Bytes of ops logged since the last snapshot.
    log_bytes: usize,
    /// When the first of those was logged.
    dirty_since: Option<Instant>,
    started: Option<Instant>,
}

impl SnapshotState {
    pub fn logged(&mut self, bytes: usize) {
        self.log_bytes += bytes;
        self.dirty_since.get_or_insert_with(Instant::now);
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

impl Room {
    pub(super) fn maybe_snapshot(&mut self) {
        let s = &self.snapshot;
        if s.in_flight() || s.log_bytes == 0 || self.durable == 0 {
            return;
        }
        let config = &self.ctx.config;
        let by_size = s.log_bytes >= config.snapshot_bytes.max(self.doc.serialized_len() / 4);
        let by_time = s
            .dirty_since
            .is_some_and(|t| t.elapsed() >= config.snapshot_interval());
        if !(by_size || by_time) || self.in_flight.len() > 1 {
            return;
        }
        // A snapshot rebuilds the document from the store and serializes it, off the
        // relay path but in this process: promised from the memory budget first, or
        // put off to a later turn (the log keeps everything meanwhile).
        let cost = self.doc.serialized_len() as u64 * crate::doc::BUILD_BYTES_PER_JSON_BYTE as u64;
        let Some(reservation) = self.ctx.memory.reserve(cost) else {
            return;
        };
        self.snapshot.started = Some(Instant::now());
        self.snapshot.log_bytes = 0;
        self.snapshot.dirty_since = None;
        let store = self.ctx.store.clone();
        let file = self.file.clone();
        let epoch = self.epoch;
        let keep = self.ctx.config.room_ops as u64;
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let result = async {
                let (base, log) = store.snapshot_and_tail(&file).await?;
                let size = base.as_ref().map_or(0, |(_, json)| json.len())
                    + log.iter().map(|p| p.ops.len()).sum::<usize>();
                let (version, doc) = crate::lane::run(size, move || {
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
            let _ = tx.send(RoomCmd::SnapshotDone(result));
        });
    }

    pub(super) fn snapshot_done(&mut self, result: Result<u64, StoreError>) -> Option<Exit> {
        let started = self.snapshot.started.take();
        match result {
            Ok(version) => {
                metrics().snapshots.inc();
                if let Some(at) = started {
                    metrics()
                        .snapshot_seconds
                        .observe(at.elapsed().as_secs_f64());
                }
                tracing::debug!(file = %self.file, version, "snapshot written");
                None
            }
            Err(StoreError::Fenced) => Some(Exit::Fenced),
            Err(StoreError::NotFound) => Some(Exit::Deleted),
            Err(e) => {
                // Nothing is lost: the log still holds everything. Try again later.
                tracing::warn!(file = %self.file, error = %e, "snapshot failed");
                self.snapshot.dirty_since.get_or_insert_with(Instant::now);
                None
            }
        }
    }
}
