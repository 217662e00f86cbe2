//! SQLite errors as store errors, rows as records, and the reads several writes share.

use rusqlite::{params, Connection, OptionalExtension, Params, Row};

use crate::ids::FileId;
use crate::store::columns::{file_from, patch_from, Columns, FILE_COLUMNS};
use crate::store::{FileRecord, LoggedPatch, StoreError, StoreResult};

pub(super) fn unavailable(e: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// `on_unique` for a uniqueness violation, `Unavailable` for anything else.
pub(super) fn unique_or_unavailable(e: rusqlite::Error, on_unique: StoreError) -> StoreError {
    let unique = matches!(&e, rusqlite::Error::SqliteFailure(f, _)
        if f.code == rusqlite::ErrorCode::ConstraintViolation);
    if unique {
        on_unique
    } else {
        unavailable(e)
    }
}

impl Columns for Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, i: usize) -> rusqlite::Result<String> {
        self.get(i)
    }
    fn maybe_text(&self, i: usize) -> rusqlite::Result<Option<String>> {
        self.get(i)
    }
    fn int(&self, i: usize) -> rusqlite::Result<i64> {
        self.get(i)
    }
    fn bytes(&self, i: usize) -> rusqlite::Result<Vec<u8>> {
        self.get(i)
    }
    fn maybe_int(&self, i: usize) -> rusqlite::Result<Option<i64>> {
        self.get(i)
    }
    fn maybe_bytes(&self, i: usize) -> rusqlite::Result<Option<Vec<u8>>> {
        self.get(i)
    }
}

/// The one row a query answers, read by `read`; `NotFound` when it answers none.
pub(super) fn found<T, P: Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> StoreResult<T> {
    conn.query_row(sql, params, read)
        .optional()
        .map_err(unavailable)?
        .ok_or(StoreError::NotFound)
}

pub(super) fn read_file(conn: &Connection, id: &FileId) -> StoreResult<FileRecord> {
    let sql = format!("SELECT {FILE_COLUMNS} FROM files WHERE id = ?1");
    found(conn, &sql, [id.as_str()], |r| file_from(r, 0))
}

pub(super) fn read_log_from(
    conn: &Connection,
    id: &FileId,
    from: u64,
) -> StoreResult<Vec<LoggedPatch>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT version, client, op_id, by, ops, t FROM ops
             WHERE file_id = ?1 AND version >= ?2 ORDER BY version",
        )
        .map_err(unavailable)?;
    let rows = stmt
        .query_map(params![id.as_str(), from as i64], |r| patch_from(r))
        .map_err(unavailable)?;
    rows.collect::<Result<_, _>>().map_err(unavailable)
}
