//! A file's snapshot and op log: taking the file, writing a snapshot, reading the tail.

use futures_util::future::join;
use tokio_postgres::{IsolationLevel, Row};

use super::rows::{big, get, snapshot_from_rows, unavailable};
use super::{prepare, PgStore};
use crate::ids::FileId;
use crate::store::columns::{file_from, patch_from, FILE_COLUMNS};
use crate::store::{SnapshotAndLog, SnapshotWrite, StoreError, StoreResult, TakenFile};

/// The columns of a logged patch, in the order [`patch_from`] reads them.
const LOG_COLUMNS: &str = "version, client, op_id, person, ops, t";

const SNAPSHOT_SQL: &str = "SELECT version, doc FROM snapshots WHERE file_id = $1";

/// The snapshot and the log a pair of pipelined queries answered.
fn snapshot_and_log(
    snapshot: Result<Vec<Row>, tokio_postgres::Error>,
    log: Result<Vec<Row>, tokio_postgres::Error>,
) -> StoreResult<SnapshotAndLog> {
    let snapshot = snapshot_from_rows(&snapshot.map_err(unavailable)?)?;
    let log = log
        .map_err(unavailable)?
        .iter()
        .map(patch_from)
        .collect::<StoreResult<Vec<_>>>()?;
    Ok((snapshot, log))
}

impl PgStore {
    /// [`crate::store::Store::take_file`].
    pub(super) async fn take(
        &self,
        id: &FileId,
        behind: u64,
        behind_bytes: u64,
    ) -> StoreResult<TakenFile> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let raise = prepare(
            &tx,
            &format!(
                "UPDATE files SET epoch = epoch + 1 WHERE id = $1 RETURNING epoch, {FILE_COLUMNS}"
            ),
        )
        .await?;
        let snapshot = prepare(&tx, SNAPSHOT_SQL).await?;
        // The patches behind the snapshot, newest first, while their ops come to at most
        // $3 bytes (their lengths only: `octet_length` reads no stored text), then
        // everything after the snapshot.
        let log = prepare(
            &tx,
            &format!(
                "WITH base AS (
                     SELECT COALESCE((SELECT version FROM snapshots WHERE file_id = $1), 0) AS v
                 ), behind AS (
                     SELECT version, sum(octet_length(ops)) OVER (ORDER BY version DESC) AS upto
                     FROM ops, base
                     WHERE file_id = $1 AND version > GREATEST(base.v - $2, 0) AND version <= base.v
                 ), first AS (
                     SELECT COALESCE(min(version), (SELECT v FROM base) + 1) AS v
                     FROM behind WHERE upto <= $3
                 )
                 SELECT {LOG_COLUMNS} FROM ops, first
                 WHERE file_id = $1 AND version >= first.v
                 ORDER BY version"
            ),
        )
        .await?;
        // The fence first: nothing is read before the epoch is ours. The row stays
        // locked until commit, so no append or snapshot slips in between the reads.
        let row = tx
            .query_opt(&raise, &[&id.as_str()])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)?;
        let epoch: i64 = get(&row, 0)?;
        let record = file_from(&row, 1)?;
        let (snapshot, log) = join(
            tx.query(&snapshot, &[&id.as_str()]),
            tx.query(&log, &[&id.as_str(), &big(behind), &big(behind_bytes)]),
        )
        .await;
        let (snapshot, log) = snapshot_and_log(snapshot, log)?;
        tx.commit().await.map_err(unavailable)?;
        Ok(TakenFile {
            record,
            epoch: epoch as u64,
            snapshot,
            log,
        })
    }

    /// [`crate::store::Store::put_snapshot`].
    pub(super) async fn save_snapshot(&self, write: &SnapshotWrite<'_>) -> StoreResult<()> {
        let &SnapshotWrite {
            file,
            epoch,
            version,
            doc,
            keep,
        } = write;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        let fence = prepare(&tx, "SELECT epoch FROM files WHERE id = $1 FOR UPDATE").await?;
        let save = prepare(
            &tx,
            "INSERT INTO snapshots (file_id, version, doc) VALUES ($1, $2, $3)
             ON CONFLICT (file_id) DO UPDATE SET version = excluded.version, doc = excluded.doc
             WHERE excluded.version > snapshots.version",
        )
        .await?;
        let trim = prepare(&tx, "DELETE FROM ops WHERE file_id = $1 AND version <= $2").await?;
        // The fence: the file's row stays locked until commit, so no takeover can
        // raise the epoch between this check and the writes.
        let current: i64 = tx
            .query_opt(&fence, &[&file.as_str()])
            .await
            .map_err(unavailable)?
            .ok_or(StoreError::NotFound)
            .and_then(|r| get(&r, 0))?;
        if current != big(epoch) {
            return Err(StoreError::Fenced);
        }
        let (saved, trimmed) = join(
            tx.execute(&save, &[&file.as_str(), &big(version), &doc]),
            tx.execute(&trim, &[&file.as_str(), &big(version.saturating_sub(keep))]),
        )
        .await;
        saved.map_err(unavailable)?;
        trimmed.map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)
    }

    /// [`crate::store::Store::snapshot_and_tail`].
    pub(super) async fn tail(&self, file: &FileId) -> StoreResult<SnapshotAndLog> {
        let mut client = self.client().await?;
        // One consistent view: a snapshot written meanwhile cannot trim the tail
        // out from under this read.
        let tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(unavailable)?;
        let snapshot = prepare(&tx, SNAPSHOT_SQL).await?;
        let tail = prepare(
            &tx,
            &format!(
                "SELECT {LOG_COLUMNS} FROM ops
                 WHERE file_id = $1
                   AND version > COALESCE((SELECT version FROM snapshots WHERE file_id = $1), 0)
                 ORDER BY version"
            ),
        )
        .await?;
        let (snapshot, tail) = join(
            tx.query(&snapshot, &[&file.as_str()]),
            tx.query(&tail, &[&file.as_str()]),
        )
        .await;
        let read = snapshot_and_log(snapshot, tail)?;
        tx.commit().await.map_err(unavailable)?;
        Ok(read)
    }
}
