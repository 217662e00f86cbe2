//! The group commit: every file's append of a journal batch in one transaction, each
//! fenced on its own.

mod args;
mod at_once;
mod columns;
mod one_by_one;
mod sql;

use super::prepare;
use super::rows::{big, get, op_bits, unavailable};
use crate::store::{FileAppend, LoggedPatch, StoreError, StoreResult};
pub(super) use at_once::append_at_once;
pub(super) use one_by_one::append_one_by_one;
use sql::APPEND_CHECK_SQL;
pub(super) use sql::APPEND_SQL;

/// Appends a journal batch: in one statement when it can, else file by file.
pub(super) async fn append(
    client: &mut deadpool_postgres::Client,
    batch: &[FileAppend],
) -> StoreResult<Vec<StoreResult<()>>> {
    if let Some(results) = append_at_once(client, batch).await? {
        return Ok(results);
    }
    // The batch names a file twice (a room's turns queued together), or a file's
    // append failed with an error (its file deleted, a version taken): each file
    // behind a savepoint of its own, so it fails alone.
    let stmt = client
        .prepare_cached(APPEND_SQL)
        .await
        .map_err(unavailable)?;
    append_one_by_one(client, &stmt, batch).await
}

/// Records `file.updated` for every file whose append landed, in the commit's own
/// transaction: an event is recorded exactly when its version is durable.
async fn record_updates(
    tx: &deadpool_postgres::Transaction<'_>,
    batch: &[FileAppend],
    results: &[StoreResult<()>],
    now: i64,
) -> StoreResult<()> {
    let updates = crate::webhook::event::files_updated(batch, results, now);
    super::webhooks::record(tx, &updates).await.map(drop)
}

/// The first and the last patch of an append; `None` when it has none (nothing to do).
fn ends(append: &FileAppend) -> Option<(&LoggedPatch, &LoggedPatch)> {
    Some((append.patches.first()?, append.patches.last()?))
}

/// What an append's fence found when it did not move: `Ok` when the file already
/// holds exactly this append under this epoch (a retried commit that had landed),
/// `NotFound` when the file is gone, else `Fenced`.
async fn explain_unmoved(
    tx: &deadpool_postgres::Transaction<'_>,
    append: &FileAppend,
    first: &LoggedPatch,
    last: &LoggedPatch,
) -> StoreResult<()> {
    let check = prepare(tx, APPEND_CHECK_SQL).await?;
    let row = tx
        .query_opt(
            &check,
            &[
                &append.file.as_str(),
                &big(first.version),
                &&first.client.0[..],
                &op_bits(first.op_id),
                &big(last.version),
                &&last.client.0[..],
                &op_bits(last.op_id),
            ],
        )
        .await
        .map_err(unavailable)?;
    let Some(row) = row else {
        return Err(StoreError::NotFound);
    };
    let epoch: i64 = get(&row, 0)?;
    let version: i64 = get(&row, 1)?;
    let first_is_ours: bool = get(&row, 2)?;
    let last_is_ours: bool = get(&row, 3)?;
    if epoch == big(append.epoch) && version >= big(last.version) && first_is_ours && last_is_ours {
        Ok(())
    } else {
        Err(StoreError::Fenced)
    }
}
