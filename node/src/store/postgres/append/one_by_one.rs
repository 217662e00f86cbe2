//! The group commit file by file, each behind a savepoint of its own.

use futures_util::future::join;
use tokio_postgres::error::SqlState;

use super::args::AppendArgs;
use super::sql::{RELEASE, ROLLBACK, SAVEPOINT};
use super::{ends, explain_unmoved};
use crate::store::postgres::now_ms;
use crate::store::postgres::rows::{get, is, unavailable};
use crate::store::{FileAppend, StoreError, StoreResult};

/// Appends a batch with each file behind a savepoint of its own, so a file whose
/// append fails with an error fails alone; one round trip per file.
pub(crate) async fn append_one_by_one(
    client: &mut deadpool_postgres::Client,
    stmt: &tokio_postgres::Statement,
    batch: &[FileAppend],
) -> StoreResult<Vec<StoreResult<()>>> {
    let tx = client.transaction().await.map_err(unavailable)?;
    let now = now_ms();
    let mut results = Vec::with_capacity(batch.len());
    // What the previous file's savepoint still needs (release, or roll back after
    // an error), sent together with the next savepoint in one message.
    let mut pending: Option<&str> = None;
    for append in batch.iter() {
        let Some((first, last)) = ends(append) else {
            results.push(Ok(()));
            continue;
        };
        let args = AppendArgs::new(append, first, last, now);
        let params = args.params();
        let opening = match pending {
            Some(before) => format!("{before}; {SAVEPOINT}"),
            None => SAVEPOINT.to_owned(),
        };
        // Pipelined: the savepoint and the fenced append go out back to back.
        let (opened, moved) =
            join(tx.batch_execute(&opening), tx.query_one(stmt, &params[..])).await;
        opened.map_err(unavailable)?;
        let result = match moved {
            Ok(row) => match get::<i64>(&row, 0)? {
                0 => explain_unmoved(&tx, append, first, last).await,
                _ => Ok(()),
            },
            // Two writers can never both land a version.
            Err(e) if is(&e, &SqlState::UNIQUE_VIOLATION) => Err(StoreError::Fenced),
            Err(e) if is(&e, &SqlState::FOREIGN_KEY_VIOLATION) => Err(StoreError::NotFound),
            Err(e) if e.as_db_error().is_some() => Err(unavailable(e)),
            // The connection itself failed: the whole batch fails (and is retried).
            Err(e) => return Err(unavailable(e)),
        };
        pending = Some(if result.is_ok() {
            RELEASE
        } else {
            // Undo whatever this file did; the savepoint name is reused.
            "ROLLBACK TO SAVEPOINT file_append; RELEASE SAVEPOINT file_append"
        });
        results.push(result);
    }
    // A transaction that saw an error must be rolled back to its savepoint before
    // COMMIT: Postgres answers COMMIT of an aborted transaction with a rollback.
    if pending.is_some_and(|p| p != RELEASE) {
        tx.batch_execute(ROLLBACK).await.map_err(unavailable)?;
    }
    super::record_updates(&tx, batch, &results, now).await?;
    tx.commit().await.map_err(unavailable)?;
    Ok(results)
}
