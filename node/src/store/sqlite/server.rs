//! The server API's queries on the embedded store: files by id prefix, and forgetting old
//! server op ids.

use rusqlite::{params, Connection};

use super::rows::unavailable;
use crate::store::columns::{file_from, FILE_COLUMNS};
use crate::store::{FileRecord, StoreResult};

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

/// [`crate::store::Store::prune_server_ops`].
pub(super) fn prune(c: &mut Connection, mark: [u8; 8], before_ms: i64) -> StoreResult<u64> {
    let n = c
        .execute(
            "DELETE FROM client_ops WHERE substr(client, 1, 8) = ?1 AND op_id < ?2",
            params![&mark[..], before_ms],
        )
        .map_err(unavailable)?;
    Ok(n as u64)
}
