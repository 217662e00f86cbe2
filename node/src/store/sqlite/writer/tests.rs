use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;

use super::{lock, Writer};

/// Writes that queue behind a long one let the journal's commit go first.
#[test]
fn a_journal_commit_goes_ahead_of_queued_writes() {
    let writer = Arc::new(Writer::new(Connection::open_in_memory().unwrap()));
    let order = Arc::new(Mutex::new(Vec::new()));
    let held = writer.ordinary();
    let spawn = |urgent: bool| {
        let (writer, order) = (writer.clone(), order.clone());
        std::thread::spawn(move || {
            let _conn = if urgent {
                writer.urgent()
            } else {
                writer.ordinary()
            };
            lock(&order).push(if urgent { "journal" } else { "other" });
        })
    };
    // Three other writes queue first, then the journal's commit.
    let others: Vec<_> = (0..3).map(|_| spawn(false)).collect();
    std::thread::sleep(Duration::from_millis(50));
    let journal = spawn(true);
    std::thread::sleep(Duration::from_millis(50));
    drop(held);
    journal.join().unwrap();
    for o in others {
        o.join().unwrap();
    }
    assert_eq!(*lock(&order), ["journal", "other", "other", "other"]);
}
