//! The journal: group commit of every room's accepted patches.
//!
//! Rooms hand it what they accepted in one turn; it takes everything waiting, makes
//! it durable in one store transaction (one sync), then tells each room how far it
//! got. While one commit is in flight the next batch gathers, so the number of syncs
//! per second stays flat however many rooms and patches there are (invariant 2).
//!
//! A store that is unreachable is retried with backoff, in order, so rooms only ever
//! see their patches become durable in version order, or learn they were fenced.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use std::sync::Arc;

use crate::metrics::metrics;
use crate::store::{FileAppend, Store, StoreError};

/// What the journal reports back to a room.
#[derive(Debug)]
pub struct Appended {
    /// The highest version now durable (when `result` is Ok).
    pub upto: u64,
    pub result: Result<(), StoreError>,
}

pub struct JournalEntry {
    pub append: FileAppend,
    pub done: Box<dyn FnOnce(Appended) + Send>,
}

#[derive(Clone)]
pub struct Journal {
    tx: mpsc::UnboundedSender<JournalEntry>,
}

/// Most files in one commit; more wait for the next.
const MAX_BATCH: usize = 4096;

impl Journal {
    /// Starts the journal's task. It ends when every `Journal` handle is dropped
    /// and what was queued is written.
    pub fn start(store: Arc<dyn Store>) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(store, rx));
        (Self { tx }, task)
    }

    /// Queues a room's turn. Returns false when the journal has stopped.
    pub fn submit(&self, entry: JournalEntry) -> bool {
        self.tx.send(entry).is_ok()
    }
}

async fn run(store: Arc<dyn Store>, mut rx: mpsc::UnboundedReceiver<JournalEntry>) {
    let mut entries = Vec::new();
    while rx.recv_many(&mut entries, MAX_BATCH).await > 0 {
        let (appends, dones): (Vec<_>, Vec<_>) =
            entries.drain(..).map(|e| (e.append, e.done)).unzip();
        let batch: Arc<[FileAppend]> = appends.into();
        let results = commit(store.as_ref(), &batch).await;
        for ((append, done), result) in batch.iter().zip(dones).zip(results) {
            let upto = append.patches.last().map_or(0, |p| p.version);
            done(Appended { upto, result });
        }
    }
}

/// Commits one batch, retrying while the store is unavailable.
async fn commit(store: &dyn Store, batch: &Arc<[FileAppend]>) -> Vec<Result<(), StoreError>> {
    let mut backoff = Duration::from_millis(50);
    loop {
        let started = Instant::now();
        match store.append(batch.clone()).await {
            Ok(results) => {
                metrics().journal_batches.inc();
                metrics()
                    .journal_commit_seconds
                    .observe(started.elapsed().as_secs_f64());
                return results;
            }
            Err(e) => {
                tracing::warn!(error = %e, files = batch.len(), "journal commit failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}
