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

/// A write in many short turns (a large document's parts) does not take the next turn
/// again and again ahead of another write that asked for one: that write waits for the turn
/// under way only.
#[test]
fn other_writes_take_their_turns_in_the_order_they_asked() {
    let writer = Arc::new(Writer::new(Connection::open_in_memory().unwrap()));
    let turns = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let parts = {
        let (writer, turns, done) = (writer.clone(), turns.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let _conn = writer.ordinary();
                std::thread::sleep(Duration::from_micros(200));
                // Counted as it ends, while it still holds the writer.
                turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    let mut waited = Vec::new();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(2));
        let mut asked = 0;
        let conn = writer.ordinary_noting(|| {
            asked = turns.load(std::sync::atomic::Ordering::SeqCst);
        });
        waited.push(turns.load(std::sync::atomic::Ordering::SeqCst) - asked);
        drop(conn);
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    parts.join().unwrap();
    // At most the turn under way when this write took its place, none after it.
    assert!(
        waited.iter().all(|&n| n <= 1),
        "turns taken by the other write while one waited: {waited:?}"
    );
}
