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

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use tokio::sync::mpsc;

use self::commit::write;
use crate::ids::FileId;
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

/// A file whose waiting patches come to more than this many bytes commits apart from
/// the rest, so small edits never wait for a large one's write and sync.
const SMALL_FILE_BYTES: usize = 64 * 1024;

/// Most bytes of large files' patches in one commit (at least one file's turn).
const MAX_LARGE_BYTES: usize = 1024 * 1024;

fn bytes(append: &FileAppend) -> usize {
    append.patches.iter().map(|p| p.ops.len()).sum()
}

/// Each turn commits first every file whose waiting patches are small, then up to
/// [`MAX_LARGE_BYTES`] of the large ones, in the order they came; the rest of the
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
        // A file goes later when what it brought this turn is large, or when a turn of
        // it already waits (its turns never pass one another).
        let mut by_file: HashMap<&FileId, usize> = HashMap::new();
        for e in &entries {
            *by_file.entry(&e.append.file).or_default() += bytes(&e.append);
        }
        let waiting: HashSet<&FileId> = deferred.iter().map(|e| &e.append.file).collect();
        let late: Vec<bool> = entries
            .iter()
            .map(|e| by_file[&e.append.file] > SMALL_FILE_BYTES || waiting.contains(&e.append.file))
            .collect();
        let (mut now, mut later) = (Vec::new(), Vec::new());
        for (e, late) in entries.into_iter().zip(late) {
            if late {
                later.push(e)
            } else {
                now.push(e)
            }
        }
        deferred.extend(later);
        write(store.as_ref(), &metrics, now).await;
        let mut turn = Vec::new();
        let mut size = 0;
        while let Some(next) = deferred.front() {
            let n = bytes(&next.append);
            if !turn.is_empty() && size + n > MAX_LARGE_BYTES {
                break;
            }
            size += n;
            turn.extend(deferred.pop_front());
        }
        write(store.as_ref(), &metrics, turn).await;
    }
}

#[cfg(test)]
mod tests;
