//! Postgres errors as store errors, and values in and out of Postgres's types.

use std::error::Error as _;

use deadpool_postgres::PoolError;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;

use crate::store::columns::Columns;
use crate::store::{StoreError, StoreResult};

/// A version, epoch or count as Postgres's BIGINT (they never reach 2^63; clamp
/// rather than wrap, so a huge `behind` means "everything").
pub(super) fn big(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A client's op id as BIGINT: the same 64 bits, so every u64 a client may send
/// reads back exactly (as in the embedded store; ids past 2^63 compare as negative,
/// which no real client reaches: JSON numbers lose precision past 2^53).
pub(super) fn op_bits(op_id: u64) -> i64 {
    op_id as i64
}

pub(super) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("postgres {}: {}", db.code().code(), db.message());
    }
    match e.source() {
        Some(source) => format!("postgres: {e}: {source}"),
        None => format!("postgres: {e}"),
    }
}

pub(super) fn unavailable(e: tokio_postgres::Error) -> StoreError {
    StoreError::Unavailable(describe(&e))
}

pub(super) fn pool_error(e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => unavailable(e),
        other => StoreError::Unavailable(format!("postgres pool: {other}")),
    }
}

pub(super) fn is(e: &tokio_postgres::Error, state: &SqlState) -> bool {
    e.code() == Some(state)
}

/// Unique violations are `Conflict`; a missing row another references is `NotFound`.
pub(super) fn insert_error(e: tokio_postgres::Error) -> StoreError {
    if is(&e, &SqlState::UNIQUE_VIOLATION) {
        StoreError::Conflict
    } else if is(&e, &SqlState::FOREIGN_KEY_VIOLATION) {
        StoreError::NotFound
    } else {
        unavailable(e)
    }
}

pub(super) fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    i: usize,
) -> StoreResult<T> {
    row.try_get(i).map_err(unavailable)
}

/// A BIGINT column that holds a version, an epoch or a count.
pub(super) fn unsigned(row: &Row, i: usize) -> StoreResult<u64> {
    Ok(get::<i64>(row, i)? as u64)
}

impl Columns for Row {
    type Error = StoreError;
    fn text(&self, i: usize) -> StoreResult<String> {
        get(self, i)
    }
    fn maybe_text(&self, i: usize) -> StoreResult<Option<String>> {
        get(self, i)
    }
    fn int(&self, i: usize) -> StoreResult<i64> {
        get(self, i)
    }
    fn bytes(&self, i: usize) -> StoreResult<Vec<u8>> {
        get(self, i)
    }
    fn maybe_int(&self, i: usize) -> StoreResult<Option<i64>> {
        get(self, i)
    }
    fn maybe_bytes(&self, i: usize) -> StoreResult<Option<Vec<u8>>> {
        get(self, i)
    }
}

/// The snapshot of `SELECT version, doc FROM snapshots`, when there is one.
pub(super) fn snapshot_from_rows(rows: &[Row]) -> StoreResult<Option<(u64, String)>> {
    rows.first()
        .map(|r| Ok((unsigned(r, 0)?, get(r, 1)?)))
        .transpose()
}
