//! Keeping the WAL short, off the commit path.

use std::time::Duration;

use rusqlite::Connection;

/// How often the WAL is copied into the database. Often, so each copy and its sync are
/// small: a commit's sync waits for whatever the disk is writing, and on the 2-vCPU VM
/// small commits beside 4 MiB synced every 250 ms had a p99 of 7-9 ms, beside the same
/// bytes as 1 MiB every 62 ms 0.8-1.2 ms (docs/reliability.md). A checkpoint with
/// nothing new to copy does no I/O.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(50);

/// Copies the WAL into the database every [`CHECKPOINT_EVERY`] on a thread and a
/// connection of its own, while the store lives. A passive checkpoint takes no lock
/// that a commit needs; the writer starts the WAL over once one has copied it all.
pub(super) fn checkpoints(conn: Connection, store: std::sync::Weak<()>) {
    let spawned = std::thread::Builder::new()
        .name("atrium-sqlite-checkpoint".into())
        .spawn(move || {
            while store.upgrade().is_some() {
                std::thread::sleep(CHECKPOINT_EVERY);
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::warn!(error = %e, "the WAL checkpoint failed; it is tried again");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "no checkpoint thread: the WAL grows until restart");
    }
}
