//! A file's snapshot and op log: taking the file and writing a snapshot, both fenced.

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::parts::{self, read_snapshot, Stored};
use super::rows::{read_file, read_log_from, unavailable};
use crate::ids::FileId;
use crate::store::{SnapshotAndLog, SnapshotWrite, StoreError, StoreResult, TakenFile};

fn immediate(c: &mut Connection) -> StoreResult<Transaction<'_>> {
    c.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(unavailable)
}

/// The first half of [`crate::store::Store::take_file`]: raises the file's epoch, in a
/// transaction of its own. Nothing is read before the epoch is ours, and once it is,
/// nothing older can change the file (every write is fenced on it), so the rest is read
/// on a reader ([`read_taken`]) and no room's commit waits for a large file's opening.
pub(super) fn raise_epoch(c: &mut Connection, id: &FileId) -> StoreResult<u64> {
    let tx = immediate(c)?;
    let epoch: i64 = tx
        .query_row(
            "UPDATE files SET epoch = epoch + 1 WHERE id = ?1 RETURNING epoch",
            [id.as_str()],
            |r| r.get(0),
        )
        .optional()
        .map_err(unavailable)?
        .ok_or(StoreError::NotFound)?;
    tx.commit().map_err(unavailable)?;
    Ok(epoch as u64)
}

/// The second half of [`crate::store::Store::take_file`], after [`raise_epoch`]: the
/// file's row, snapshot and log, in one read transaction. Should another take raise the
/// epoch meanwhile, what is read is still durable and whole, and this holder's appends are
/// fenced.
pub(super) fn read_taken(
    c: &mut Connection,
    id: &FileId,
    epoch: u64,
    behind: u64,
    behind_bytes: u64,
) -> StoreResult<TakenFile> {
    let tx = c.transaction().map_err(unavailable)?;
    let record = read_file(&tx, id)?;
    let snapshot = read_snapshot(&tx, id)?;
    let base = snapshot.as_ref().map_or(0, |s| s.0);
    let from = first_behind(&tx, id, base, behind, behind_bytes)?;
    let log = read_log_from(&tx, id, from)?;
    Ok(TakenFile {
        record,
        epoch,
        snapshot,
        log,
    })
}

/// The first version to read: the newest of the `behind` patches at or before the
/// snapshot's version `base` whose ops come to at most `bytes`, then everything after.
/// Read row by row, newest first, stopping at the bound (SQLite reads each text for its
/// length, one row at a time).
fn first_behind(
    c: &Connection,
    id: &FileId,
    base: u64,
    behind: u64,
    bytes: u64,
) -> StoreResult<u64> {
    let oldest = base.saturating_sub(behind) + 1;
    let mut stmt = c
        .prepare_cached(
            "SELECT version, length(CAST(ops AS BLOB)) FROM ops
             WHERE file_id = ?1 AND version >= ?2 AND version <= ?3 ORDER BY version DESC",
        )
        .map_err(unavailable)?;
    let mut rows = stmt
        .query(params![id.as_str(), oldest as i64, base as i64])
        .map_err(unavailable)?;
    let (mut from, mut total) = (base + 1, 0u64);
    while let Some(row) = rows.next().map_err(unavailable)? {
        let (version, len): (i64, i64) = (
            row.get(0).map_err(unavailable)?,
            row.get(1).map_err(unavailable)?,
        );
        total = total.saturating_add(len as u64);
        if total > bytes {
            break;
        }
        from = version as u64;
    }
    Ok(from)
}

/// [`crate::store::Store::put_snapshot`], with its document `stored` (its parts, if any,
/// already written): the row names it only if its version is newer than the row's, and
/// the parts of the document it replaces (or of its own, if it is not newer) go in the
/// same transaction. On an error, parts of `stored` are the caller's to forget.
pub(super) fn snapshot(
    c: &mut Connection,
    write: &SnapshotWrite<'_>,
    stored: &Stored<'_>,
) -> StoreResult<()> {
    let SnapshotWrite {
        file,
        epoch,
        version,
        keep,
        ..
    } = *write;
    let tx = immediate(c)?;
    let current: Option<i64> = tx
        .query_row(
            "SELECT epoch FROM files WHERE id = ?1",
            [file.as_str()],
            |r| r.get(0),
        )
        .optional()
        .map_err(unavailable)?;
    match current {
        None => return Err(StoreError::NotFound),
        Some(e) if e as u64 != epoch => return Err(StoreError::Fenced),
        Some(_) => {}
    }
    let replaced = parts::named(&tx, file.as_str())?;
    let (doc, in_parts) = stored.columns();
    let written = tx
        .execute(
            "INSERT INTO snapshots (file_id, version, doc, parts) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (file_id) DO UPDATE
               SET version = excluded.version, doc = excluded.doc, parts = excluded.parts
             WHERE excluded.version > snapshots.version",
            params![file.as_str(), version as i64, doc, in_parts],
        )
        .map_err(unavailable)?;
    // Whichever document the row no longer names (or never came to) loses its parts.
    match (written, replaced, in_parts) {
        (1, Some(old), _) | (0, _, Some(old)) => parts::remove(&tx, old)?,
        _ => {}
    }
    tx.execute(
        "DELETE FROM ops WHERE file_id = ?1 AND version <= ?2",
        params![file.as_str(), version.saturating_sub(keep) as i64],
    )
    .map_err(unavailable)?;
    tx.commit().map_err(unavailable)
}

/// [`crate::store::Store::snapshot_and_tail`], in one read transaction: a snapshot
/// written meanwhile cannot trim the tail out from under it.
pub(super) fn tail(c: &mut Connection, file: &FileId) -> StoreResult<SnapshotAndLog> {
    let tx = c.transaction().map_err(unavailable)?;
    let snapshot = read_snapshot(&tx, file)?;
    let base = snapshot.as_ref().map_or(0, |s| s.0);
    let log = read_log_from(&tx, file, base + 1)?;
    Ok((snapshot, log))
}

#[cfg(test)]
mod tests;
