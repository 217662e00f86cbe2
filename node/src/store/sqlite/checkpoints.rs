//! Keeping the WAL short, off the commit path.

use std::time::Duration;

use rusqlite::Connection;

/// How often the WAL is copied into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

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
