//! When a room snapshots its document: once the log behind the last snapshot
//! passes max(`ATRIUM_SNAPSHOT_BYTES`, a quarter of the document), or once it has
//! changed for `ATRIUM_SNAPSHOT_MS`; one at a time, within the memory budget; and
//! what a snapshot's result does (a failure is tried again later, a fence ends the room).

use std::time::Instant;

use super::core::RoomCore;
use super::exit::{Effect, Exit};
use super::snapshot::SnapshotJob;
use crate::store::StoreError;

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
            keep: self.log_kept(),
            reservation,
        }));
    }

    /// How many patches the store keeps behind a snapshot: those this room still holds
    /// for resuming (at most `ATRIUM_ROOM_OPS`, within `ATRIUM_ROOM_OPS_BYTES`), since a
    /// room opened later reads no more than that of them. Counting patches alone let
    /// guests with the edit key keep a thousand 1 MB patches, a gigabyte, behind every
    /// file (the fifth review).
    fn log_kept(&self) -> u64 {
        self.recent.len().min(self.rules.config.room_ops) as u64
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
