//! One commit: a batch of files' patches in one store transaction, retried while
//! the store is unavailable, then each room told how far it got.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Appended, JournalEntry};
use crate::metrics::Metrics;
use crate::store::{FileAppend, Store, StoreError};

/// The longest wait between retries of a commit the store refused.
const RETRY_CAP: Duration = Duration::from_millis(500);

/// Commits `entries` in one transaction and tells each room how far it got.
pub(super) async fn write(store: &dyn Store, metrics: &Metrics, entries: Vec<JournalEntry>) {
    if entries.is_empty() {
        return;
    }
    let (appends, dones): (Vec<_>, Vec<_>) =
        entries.into_iter().map(|e| (e.append, e.done)).unzip();
    let batch: Arc<[FileAppend]> = appends.into();
    let results = commit(store, metrics, &batch).await;
    for ((append, done), result) in batch.iter().zip(dones).zip(results) {
        let upto = append.patches.last().map_or(0, |p| p.version);
        done(Appended { upto, result });
    }
}

/// Commits one batch, retrying while the store is unavailable.
async fn commit(
    store: &dyn Store,
    metrics: &Metrics,
    batch: &Arc<[FileAppend]>,
) -> Vec<Result<(), StoreError>> {
    let mut backoff = Duration::from_millis(50);
    loop {
        let started = Instant::now();
        match store.append(batch.clone()).await {
            Ok(results) => {
                metrics.journal_batches.inc();
                metrics
                    .journal_commit_seconds
                    .observe(started.elapsed().as_secs_f64());
                return results;
            }
            Err(e) => {
                tracing::warn!(error = %e, files = batch.len(), "journal commit failed; retrying");
                tokio::time::sleep(backoff).await;
                // Capped low: a failed attempt on a store that is down is cheap, and every
                // patch waiting here is a person waiting for an ack once it is back.
                backoff = (backoff * 2).min(RETRY_CAP);
            }
        }
    }
}
