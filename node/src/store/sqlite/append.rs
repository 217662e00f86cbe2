//! The journal's group commit: every file's append in one transaction, each behind a
//! savepoint of its own.

use rusqlite::{params, Connection};

use super::rows::{read_file, unavailable, unique_or_unavailable};
use super::{now_ms, writer::Writer};
use crate::store::{FileAppend, StoreError, StoreResult};

/// Appends a batch on the writing connection, ahead of other writes that wait for it.
pub(super) fn append_batch(
    writer: &Writer,
    batch: &[FileAppend],
    webhooks: bool,
) -> StoreResult<Vec<StoreResult<()>>> {
    let mut conn = writer.urgent();
    let mut tx = conn.transaction().map_err(unavailable)?;
    let now = now_ms();
    let mut results = Vec::with_capacity(batch.len());
    for append in batch.iter() {
        // A savepoint per file: one fenced file does not fail the others.
        let sp = tx.savepoint().map_err(unavailable)?;
        let result = append_one(&sp, append, now);
        if result.is_ok() {
            sp.commit().map_err(unavailable)?;
        }
        results.push(result);
    }
    // `file.updated` for every file whose append landed, in the same commit: an event
    // is recorded exactly when its version is durable.
    let updates = match webhooks {
        true => crate::webhook::event::files_updated(batch, &results, now),
        false => Vec::new(),
    };
    super::webhooks::record(&tx, &updates)?;
    tx.commit().map_err(unavailable)?;
    Ok(results)
}

/// Appends one file's patches inside the open transaction: the fence and the
/// gapless check first (one statement), then the rows.
fn append_one(conn: &Connection, append: &FileAppend, now: i64) -> StoreResult<()> {
    let (Some(first), Some(last)) = (append.patches.first(), append.patches.last()) else {
        return Ok(());
    };
    let moved = conn
        .prepare_cached(
            "UPDATE files SET version = ?1, updated_at = ?2
             WHERE id = ?3 AND epoch = ?4 AND version = ?5",
        )
        .and_then(|mut s| {
            s.execute(params![
                last.version as i64,
                now,
                append.file.as_str(),
                append.epoch as i64,
                first.version as i64 - 1
            ])
        })
        .map_err(unavailable)?;
    if moved == 0 {
        // Either the epoch moved on, or the file is gone: both end this writer.
        return match read_file(conn, &append.file) {
            Err(StoreError::NotFound) => Err(StoreError::NotFound),
            _ => Err(StoreError::Fenced),
        };
    }
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO ops (file_id, version, client, op_id, by, ops, t)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(unavailable)?;
    let mut client_op = conn
        .prepare_cached(
            "INSERT INTO client_ops (file_id, client, op_id, version) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (file_id, client) DO UPDATE
             SET op_id = excluded.op_id, version = excluded.version
             WHERE excluded.op_id > client_ops.op_id",
        )
        .map_err(unavailable)?;
    for p in &append.patches {
        insert
            .execute(params![
                append.file.as_str(),
                p.version as i64,
                &p.client.0[..],
                p.op_id as i64,
                p.by,
                p.ops,
                p.t
            ])
            .map_err(|e| unique_or_unavailable(e, StoreError::Fenced))?;
        client_op
            .execute(params![
                append.file.as_str(),
                &p.client.0[..],
                p.op_id as i64,
                p.version as i64
            ])
            .map_err(unavailable)?;
    }
    Ok(())
}
