//! The journal: group commit of every room's accepted patches.
//!
//! Rooms hand it what they accepted in one turn; it takes everything waiting, makes
//! it durable in one store transaction (one sync), then tells each room how far it
//! got. While one commit is in flight the next batch gathers, so the number of syncs
//! per second stays flat however many rooms and patches there are (invariant 2).
//!
//! A store that is unreachable is retried with backoff, in order, so rooms only ever
//! see their patches become durable in version order, or learn they were fenced.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

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

/// What the journal's task is handed, in order.
enum Job {
    Append(JournalEntry),
    /// Write what came before, then end.
    Finish,
}

#[derive(Clone)]
pub struct Journal {
    tx: mpsc::UnboundedSender<Job>,
}

/// The longest wait between retries of a commit the store refused.
const RETRY_CAP: Duration = Duration::from_millis(500);

/// Most files in one commit; more wait for the next.
const MAX_BATCH: usize = 4096;

impl Journal {
    /// Starts the journal's task. It ends after [`finish`](Self::finish), or when every
    /// `Journal` handle is dropped, once what was queued is written.
    pub fn start(store: Arc<dyn Store>) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(store, rx));
        (Self { tx }, task)
    }

    /// Queues a room's turn. Returns false when the journal has stopped.
    pub fn submit(&self, entry: JournalEntry) -> bool {
        self.tx.send(Job::Append(entry)).is_ok()
    }

    /// Asks the task to end once everything submitted before this call is written. Shutdown
    /// says so rather than waiting for the last handle to go: idle HTTP connections (a
    /// router's keep-alive pool) hold the node's state, and with it the journal, until they
    /// close.
    pub fn finish(&self) {
        let _ = self.tx.send(Job::Finish);
    }
}

async fn run(store: Arc<dyn Store>, mut rx: mpsc::UnboundedReceiver<Job>) {
    let mut jobs = Vec::new();
    while rx.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        let mut finish = false;
        let (appends, dones): (Vec<_>, Vec<_>) = jobs
            .drain(..)
            .filter_map(|job| match job {
                Job::Append(e) => Some((e.append, e.done)),
                Job::Finish => {
                    finish = true;
                    None
                }
            })
            .unzip();
        if !appends.is_empty() {
            let batch: Arc<[FileAppend]> = appends.into();
            let results = commit(store.as_ref(), &batch).await;
            for ((append, done), result) in batch.iter().zip(dones).zip(results) {
                let upto = append.patches.last().map_or(0, |p| p.version);
                done(Appended { upto, result });
            }
        }
        if finish {
            return;
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
                // Capped low: a failed attempt on a store that is down is cheap, and every
                // patch waiting here is a person waiting for an ack once it is back.
                backoff = (backoff * 2).min(RETRY_CAP);
            }
        }
    }
}
