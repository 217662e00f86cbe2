//! The server API's queries on the embedded store: files by id prefix, and forgetting old
//! server op ids.

use rusqlite::{params, Connection};

use super::rows::unavailable;
use crate::store::columns::{file_from, FILE_COLUMNS};
use crate::store::{FileRecord, StoreResult, SERVER_OP_MARK_HEX};

/// The first string after every id that starts with `prefix`: ids hold only
/// `[A-Za-z0-9_-]`, all below `~`.
pub(crate) fn prefix_end(prefix: &str) -> String {
    format!("{prefix}~")
}

/// [`crate::store::Store::files_with_prefix`]: a range scan of the primary key (SQLite
/// compares text byte by byte).
pub(super) fn with_prefix(
    c: &Connection,
    prefix: &str,
    after: Option<&str>,
    limit: u64,
) -> StoreResult<Vec<FileRecord>> {
    let mut stmt = c
        .prepare_cached(&format!(
            "SELECT {FILE_COLUMNS} FROM files WHERE id >= ?1 AND id < ?2 AND id > ?3
             ORDER BY id LIMIT ?4"
        ))
        .map_err(unavailable)?;
    let rows = stmt
        .query_map(
            params![
                prefix,
                prefix_end(prefix),
                after.unwrap_or(""),
                limit as i64
            ],
            |r| file_from(r, 0),
        )
        .map_err(unavailable)?;
    rows.collect::<Result<_, _>>().map_err(unavailable)
}

/// The server op ids' index: only their rows, by time (the mark spelled out, so that the
/// planner matches it to the query's).
pub(super) fn server_ops_index() -> String {
    format!(
        "CREATE INDEX IF NOT EXISTS client_ops_server ON client_ops(op_id)
         WHERE substr(client, 1, 8) = X'{SERVER_OP_MARK_HEX}';"
    )
}

/// [`crate::store::Store::prune_server_ops`]: on [`server_ops_index`], so it reads only
/// the expired rows.
pub(super) fn prune(c: &mut Connection, before_ms: i64) -> StoreResult<u64> {
    let sql = format!(
        "DELETE FROM client_ops WHERE substr(client, 1, 8) = X'{SERVER_OP_MARK_HEX}' AND op_id < ?1"
    );
    let n = c
        .prepare_cached(&sql)
        .and_then(|mut s| s.execute(params![before_ms]))
        .map_err(unavailable)?;
    Ok(n as u64)
}
