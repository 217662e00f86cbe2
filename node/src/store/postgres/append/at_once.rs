//! The group commit as one statement over every file of the batch.

use std::collections::HashSet;

use super::args::{AppendAll, AppendArgs};
use super::sql::APPEND_ALL_SQL;
use super::{ends, explain_unmoved};
use crate::store::postgres::now_ms;
use crate::store::postgres::rows::{get, unavailable};
use crate::store::{FileAppend, StoreResult};

/// Appends a batch whose files are all different in one statement and one round trip:
/// a thousand rooms writing together cost one statement, not a thousand. A fence that
/// did not move is explained as usual. `None` when the batch names a file twice or the
/// statement failed with an error (rolled back): the caller takes another path.
pub(crate) async fn append_at_once(
    client: &mut deadpool_postgres::Client,
    batch: &[FileAppend],
) -> StoreResult<Option<Vec<StoreResult<()>>>> {
    let mut files = HashSet::with_capacity(batch.len());
    if !batch.iter().all(|a| files.insert(&a.file)) {
        return Ok(None);
    }
    let now = now_ms();
    let args: Vec<AppendArgs<'_>> = batch
        .iter()
        .filter_map(|a| ends(a).map(|(first, last)| AppendArgs::new(a, first, last, now)))
        .collect();
    let mut all = AppendAll::default();
    for a in &args {
        all.push(a);
    }
    let stmt = client
        .prepare_cached(APPEND_ALL_SQL)
        .await
        .map_err(unavailable)?;
    let tx = client.transaction().await.map_err(unavailable)?;
    let params = all.params(&now);
    let rows = match tx.query(&stmt, &params[..]).await {
        Ok(rows) => rows,
        Err(e) if e.as_db_error().is_none() => return Err(unavailable(e)),
        Err(_) => {
            tx.rollback().await.map_err(unavailable)?;
            return Ok(None);
        }
    };
    let mut moved = HashSet::with_capacity(rows.len());
    for row in &rows {
        moved.insert(get::<String>(row, 0)?);
    }
    let mut results = Vec::with_capacity(batch.len());
    for append in batch {
        let Some((first, last)) = ends(append) else {
            results.push(Ok(()));
            continue;
        };
        results.push(if moved.contains(append.file.as_str()) {
            Ok(())
        } else {
            explain_unmoved(&tx, append, first, last).await
        });
    }
    super::record_updates(&tx, batch, &results, now).await?;
    tx.commit().await.map_err(unavailable)?;
    Ok(Some(results))
}
