//! Snapshots, written off the relay path (invariant 5 in docs/architecture.md).
//!
//! The room's core decides when (`compaction.rs`). A background task then
//! rebuilds the document from the stored snapshot and log (never touching the
//! room's copy), writes it fenced by the room's epoch, and trims the log to the
//! recent operations behind it.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::RoomCmd;
use crate::doc::{parse_ops, DocLimits, Document};
use crate::ids::FileId;
use crate::memory::Reservation;
use crate::store::{LoggedPatch, Store};

#[derive(Default)]
pub struct SnapshotState {
    /// Bytes of ops logged since the last snapshot.
    pub(super) log_bytes: usize,
    /// When the first of those was logged.
    pub(super) dirty_since: Option<Instant>,
    /// When the snapshot under way started, and the log bytes it covers.
    pub(super) started: Option<(Instant, usize)>,
    /// When the last snapshot failed: the next waits `ATRIUM_SNAPSHOT_MS` from then.
    pub(super) failed_at: Option<Instant>,
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
        max_node_bytes: usize::MAX,
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
                // A stored snapshot that does not parse fails the job: taken as empty, the
                // snapshot written from it would lose every edit before it.
                let (after, mut doc) = match base {
                    Some((v, json)) => (v, Document::from_json(json.as_bytes(), &limits)?),
                    None => (0, Document::new()),
                };
                let version = replay(&mut doc, &log, after);
                Ok::<_, crate::doc::PatchError>((version, doc.to_json()))
            })
            .await
            .map_err(|e| {
                crate::store::StoreError::Unavailable(format!("the stored snapshot: {e}"))
            })?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::conformance::new_file;
    use crate::store::sqlite::SqliteStore;

    /// A stored snapshot that does not parse fails the job, and nothing is written: taken as
    /// an empty document, the snapshot written from it would have lost every edit in it.
    #[tokio::test]
    async fn an_unreadable_stored_snapshot_fails_the_job_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).unwrap());
        let (_, file) = new_file(store.as_ref()).await;
        let epoch = store.take_file(&file, 0).await.unwrap().epoch;
        store
            .write_snapshot(&file, epoch, 3, "{not a document", 0)
            .await
            .unwrap();
        let memory = crate::memory::MemoryGuard::new(1 << 30);
        let job = SnapshotJob {
            file: file.clone(),
            epoch,
            keep: 0,
            reservation: memory.reserve(1).unwrap(),
        };
        let (room, mut done) = mpsc::unbounded_channel();
        spawn(job, store.clone(), crate::metrics::Metrics::new(), room);
        match done.recv().await {
            Some(RoomCmd::SnapshotDone(Err(_))) => {}
            Some(RoomCmd::SnapshotDone(Ok(v))) => panic!("a snapshot of version {v} was written"),
            _ => panic!("no answer from the job"),
        }
        let (stored, _) = store.snapshot_and_tail(&file).await.unwrap();
        assert_eq!(stored, Some((3, "{not a document".to_owned())));
    }
}
