use super::*;
use crate::ids::FileId;
use crate::store::conformance::{new_file, patch};
use crate::store::sqlite::SqliteStore;
use crate::store::LoggedPatch;
use std::sync::Mutex;

/// Patches `from..=to` of about `size` bytes each.
fn sized(from: u64, to: u64, size: usize) -> Vec<LoggedPatch> {
    (from..=to)
        .map(|v| LoggedPatch {
            ops: format!(r#"[{{"set":"{}"}}]"#, "x".repeat(size)),
            ..patch(v, 1, v)
        })
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn small_turns_are_durable_before_a_large_one_and_a_file_keeps_its_order() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).unwrap());
    let (_, big) = new_file(store.as_ref()).await;
    let (_, small) = new_file(store.as_ref()).await;
    let big_epoch = store.take_file(&big, 0).await.unwrap().epoch;
    let small_epoch = store.take_file(&small, 0).await.unwrap().epoch;
    let (journal, task) = Journal::start(store.clone(), Metrics::new());
    let order = Arc::new(Mutex::new(Vec::new()));
    let submit = |file: &FileId, epoch: u64, patches: Vec<LoggedPatch>, name: &'static str| {
        let order = order.clone();
        assert!(journal.submit(JournalEntry {
            append: FileAppend {
                file: file.clone(),
                epoch,
                patches,
            },
            done: Box::new(move |a: Appended| {
                a.result.expect("durable");
                order.lock().unwrap().push((name, a.upto));
            }),
        }));
    };
    // All in one drain (the journal's task has not run yet): two turns of the
    // large file (three 600 KB patches, then a small one), and a small file's turn.
    submit(&big, big_epoch, sized(1, 3, 600 * 1024), "big");
    submit(&big, big_epoch, sized(4, 4, 10), "big");
    submit(&small, small_epoch, sized(1, 1, 10), "small");
    journal.finish();
    task.await.unwrap();
    let order = order.lock().unwrap().clone();
    assert_eq!(order, vec![("small", 1), ("big", 3), ("big", 4)]);
    // Everything is in the log, in order.
    let taken = store.take_file(&big, u64::MAX).await.unwrap();
    let versions: Vec<u64> = taken.log.iter().map(|p| p.version).collect();
    assert_eq!(versions, vec![1, 2, 3, 4]);
}
