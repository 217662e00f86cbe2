//! The journal: group commit of every room's accepted patches.
//!
//! Rooms hand it what they accepted in one turn; it takes everything waiting, makes
//! it durable in one store transaction (one sync), then tells each room how far it
//! got. While one commit is in flight the next batch gathers, so the number of syncs
//! per second stays flat however many rooms and patches there are (invariant 2 in
//! docs/architecture.md).
//!
//! A large turn (a file's patches over 64 KiB) commits after the small ones of the
//! same moment, and at most 1 MiB of them at once, so one person's large edits cost
//! others at most one such write.
//!
//! A store that is unreachable is retried with backoff, in order, so rooms only ever
//! see their patches become durable in version order, or learn they were fenced.

mod commit;
mod turns;

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc;

use self::commit::write;
use self::turns::{defer_large, next_large_turn};
use crate::metrics::Metrics;
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

/// Most files in one commit; more wait for the next.
const MAX_BATCH: usize = 4096;

impl Journal {
    /// Starts the journal's task. It ends after [`finish`](Self::finish), or when every
    /// `Journal` handle is dropped, once what was queued is written.
    pub fn start(
        store: Arc<dyn Store>,
        metrics: Arc<Metrics>,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(store, metrics, rx));
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

/// Each turn commits first every file whose waiting patches are small, then up to
/// `turns::MAX_LARGE_BYTES` of the large ones, in the order they came; the rest of the
/// large ones wait for the next turn, behind the small ones that arrive meanwhile.
/// A file's turns never pass one another: once a file has a turn deferred, its later
/// turns are deferred behind it.
async fn run(store: Arc<dyn Store>, metrics: Arc<Metrics>, mut rx: mpsc::UnboundedReceiver<Job>) {
    let mut jobs = Vec::new();
    let mut deferred: VecDeque<JournalEntry> = VecDeque::new();
    let mut finish = false;
    loop {
        if deferred.is_empty() {
            if finish || rx.recv_many(&mut jobs, MAX_BATCH).await == 0 {
                return;
            }
        } else {
            // Large turns are waiting: take what else came, without waiting for more.
            while jobs.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(job) => jobs.push(job),
                    Err(_) => break,
                }
            }
        }
        let mut entries = Vec::new();
        for job in jobs.drain(..) {
            match job {
                Job::Append(e) => entries.push(e),
                Job::Finish => finish = true,
            }
        }
        let now = defer_large(entries, &mut deferred);
        write(store.as_ref(), &metrics, now).await;
        let turn = next_large_turn(&mut deferred);
        write(store.as_ref(), &metrics, turn).await;
    }
}

#[cfg(test)]
mod tests;
