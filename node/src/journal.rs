//! The journal: group commit of every room's accepted patches.
//!
//! Rooms hand it what they accepted in one turn; it takes everything waiting, makes
//! it durable in one store transaction (one sync), then tells each room how far it
//! got. While one commit is in flight the next batch gathers, so the number of syncs
//! per second stays flat however many rooms and patches there are (invariant 2).
//!
//! A store that is unreachable is retried with backoff, in order, so rooms only ever
//! see their patches become durable in version order, or learn they were fenced.

use std::sync::atomic::{AtomicUsize, Ordering};
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

#[derive(Clone)]
pub struct Journal {
    tx: mpsc::UnboundedSender<JournalEntry>,
    /// Entries submitted and not yet answered.
    pending: Arc<AtomicUsize>,
}

/// The longest wait between retries of a commit the store refused.
const RETRY_CAP: Duration = Duration::from_millis(500);

/// Most files in one commit; more wait for the next.
const MAX_BATCH: usize = 4096;

impl Journal {
    /// Starts the journal's task. It ends when every `Journal` handle is dropped
    /// and what was queued is written.
    pub fn start(store: Arc<dyn Store>) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn(run(store, rx, pending.clone()));
        (Self { tx, pending }, task)
    }

    /// Queues a room's turn. Returns false when the journal has stopped.
    pub fn submit(&self, entry: JournalEntry) -> bool {
        self.pending.fetch_add(1, Ordering::AcqRel);
        let sent = self.tx.send(entry).is_ok();
        if !sent {
            self.pending.fetch_sub(1, Ordering::AcqRel);
        }
        sent
    }

    /// Waits until everything submitted so far has been answered. Shutdown uses it rather
    /// than waiting for the task to end: idle HTTP connections (a router's keep-alive pool)
    /// hold handles to the node's state, and with it the journal, until they close.
    pub async fn drained(&self) {
        while self.pending.load(Ordering::Acquire) > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

async fn run(
    store: Arc<dyn Store>,
    mut rx: mpsc::UnboundedReceiver<JournalEntry>,
    pending: Arc<AtomicUsize>,
) {
    let mut entries = Vec::new();
    while rx.recv_many(&mut entries, MAX_BATCH).await > 0 {
        let (appends, dones): (Vec<_>, Vec<_>) =
            entries.drain(..).map(|e| (e.append, e.done)).unzip();
        let batch: Arc<[FileAppend]> = appends.into();
        let results = commit(store.as_ref(), &batch).await;
        for ((append, done), result) in batch.iter().zip(dones).zip(results) {
            let upto = append.patches.last().map_or(0, |p| p.version);
            done(Appended { upto, result });
            pending.fetch_sub(1, Ordering::AcqRel);
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
