//! Snapshots and the log behind them, what deleting a file takes with it, and the
//! fidelity of what is stored.

use super::support::{
    account, append_one, assert_err, assert_same_log, file_with_log, op, patch, patches, record,
    take, versions, write_doc, write_doc_text,
};
use crate::ids::FileId;
use crate::store::{Holder, Store, StoreError};

/// The snapshot and the versions of the tail after it.
async fn tail(store: &dyn Store, file: &FileId) -> (Option<(u64, String)>, Vec<u64>) {
    let (snapshot, tail) = store.snapshot_and_tail(file).await.expect("read");
    (snapshot, versions(&tail))
}

fn doc(version: u64) -> Option<(u64, String)> {
    Some((version, format!("doc{version}")))
}

/// A snapshot never replaces one of a higher version; writing one trims the log
/// to `keep` patches behind it; the tail after it comes back in order.
pub async fn snapshots_never_go_back_and_trim_the_log(store: &dyn Store) {
    let (file, epoch) = file_with_log(store, 10).await;

    write_doc(store, &file, epoch, 8, 3).await;
    let (snapshot, tail_patches) = store.snapshot_and_tail(&file).await.expect("read");
    assert_eq!(snapshot, doc(8));
    assert_same_log(&tail_patches, &patches(9, 10, 1));
    // Trimmed to 3 behind the snapshot: 6, 7 and 8 stay.
    let t = store.take_file(&file, 1_000).await.expect("take");
    let epoch = t.epoch;
    assert_eq!(t.snapshot, doc(8));
    assert_eq!(versions(&t.log), vec![6, 7, 8, 9, 10]);

    // An older snapshot is accepted but replaces nothing.
    write_doc(store, &file, epoch, 5, 3).await;
    assert_eq!(tail(store, &file).await, (doc(8), vec![9, 10]));

    // A keep larger than the version trims nothing.
    write_doc(store, &file, epoch, 9, 100).await;
    let t = store.take_file(&file, 1_000).await.expect("take");
    let epoch = t.epoch;
    assert_eq!(t.snapshot, doc(9));
    assert_eq!(versions(&t.log), vec![6, 7, 8, 9, 10]);

    // keep = 0 trims up to the snapshot itself.
    write_doc(store, &file, epoch, 10, 0).await;
    let t = store.take_file(&file, 1_000).await.expect("take");
    assert_eq!(t.snapshot, doc(10));
    assert!(t.log.is_empty());
    assert_eq!(tail(store, &file).await, (doc(10), vec![]));

    // Appends go on after the snapshot.
    append_one(store, &file, t.epoch, patches(11, 12, 2))
        .await
        .expect("append after");
    let (_, tail_patches) = store.snapshot_and_tail(&file).await.expect("read");
    assert_same_log(&tail_patches, &patches(11, 12, 2));

    assert_err!(
        store
            .write_snapshot(&FileId::generate(), 1, 1, "x", 0)
            .await,
        StoreError::NotFound
    );
    // A file with no snapshot: the whole log is the tail.
    let (fresh, _) = file_with_log(store, 2).await;
    assert_eq!(tail(store, &fresh).await, (None, vec![1, 2]));
}

/// A deleted file takes its snapshot, log and client ops with it; its writers get
/// `NotFound`; a new file under the same id starts empty, and above the deleted file's
/// epoch, so those writers stay fenced from it.
pub async fn deleted_file_is_gone_everywhere(store: &dyn Store) {
    let owner = account(store).await;
    let r = record(&owner.id, 1_000);
    store
        .create_file(&r, Some("doc0".into()))
        .await
        .expect("create");
    let epoch = take(store, &r.id).await;
    append_one(store, &r.id, epoch, patches(1, 4, 1))
        .await
        .expect("append");
    write_doc(store, &r.id, epoch, 3, 1).await;
    store.delete_file(&r.id).await.expect("delete");

    assert_err!(
        append_one(store, &r.id, epoch, vec![patch(5, 1, 5)]).await,
        StoreError::NotFound
    );
    assert_err!(
        store.write_snapshot(&r.id, epoch, 4, "doc4", 0).await,
        StoreError::NotFound
    );
    assert_err!(store.take_file(&r.id, 0).await, StoreError::NotFound);
    assert_err!(store.epoch(&r.id).await, StoreError::NotFound);
    assert_eq!(op(store, &r.id, 1).await, None);
    assert_eq!(tail(store, &r.id).await, (None, vec![]));

    store.create_file(&r, None).await.expect("recreate");
    // Writers of the deleted file that are still finishing name its epoch: the new file
    // starts above every epoch a deleted file had, so they are fenced, before its first
    // take and after.
    assert_err!(
        store.write_snapshot(&r.id, epoch, 9, "doc9", 0).await,
        StoreError::Fenced
    );
    assert_err!(
        append_one(store, &r.id, epoch, patches(1, 1, 1)).await,
        StoreError::Fenced
    );
    let t = store.take_file(&r.id, 1_000).await.expect("take");
    assert!(t.epoch > epoch, "epoch {} again after {epoch}", t.epoch);
    assert_err!(
        store.write_snapshot(&r.id, epoch, 9, "doc9", 0).await,
        StoreError::Fenced
    );
    assert_eq!(t.record.version, 0);
    assert_eq!(t.snapshot, None);
    assert!(t.log.is_empty());
    assert_eq!(op(store, &r.id, 1).await, None);
    append_one(store, &t.record.id, t.epoch, patches(1, 1, 1))
        .await
        .expect("a fresh log starts at 1");
}

/// A document of `bytes` whose multi-byte characters fall across any fixed boundary of
/// parts, different for each `seed`.
fn large_doc(seed: u32, bytes: usize) -> String {
    let mut doc = format!("{{\"seed\":{seed},\"text\":\"");
    let mut i = 0u32;
    while doc.len() < bytes {
        doc.push_str(["é", "名", "a", "🙂"][(i % 4) as usize]);
        i += 1;
    }
    doc.push_str("\"}");
    doc
}

/// Documents of hundreds of kilobytes (the embedded store writes them in parts) come back
/// byte for byte from a creation and from snapshots; a snapshot that is not newer, or not
/// of the file's epoch, replaces nothing; the owner's storage counts the document the
/// file has now, once.
pub async fn large_documents_round_trip(store: &dyn Store) {
    let owner = account(store).await;
    let of_owner = Holder::Account(owner.id.clone());
    let r = record(&owner.id, 1_000);
    let first = large_doc(0, 300_000);
    store
        .create_file(&r, Some(first.clone()))
        .await
        .expect("create");
    assert_eq!(
        store.stored_bytes(&of_owner).await.unwrap(),
        first.len() as u64
    );
    let t = store.take_file(&r.id, 1_000).await.expect("take");
    assert_eq!(t.snapshot, Some((0, first.clone())));
    append_one(store, &r.id, t.epoch, patches(1, 4, 1))
        .await
        .expect("append");

    let third = large_doc(3, 200_001);
    write_doc_text(store, &r.id, t.epoch, 3, &third, 0).await;
    assert_eq!(
        tail(store, &r.id).await,
        (Some((3, third.clone())), vec![4])
    );
    let stored = store.stored_bytes(&of_owner).await.unwrap();
    let around = |n: u64| n >= third.len() as u64 && n < third.len() as u64 + 10_000;
    assert!(around(stored), "{stored} stored for {}", third.len());

    // Not newer: nothing replaced, nothing more stored.
    write_doc_text(store, &r.id, t.epoch, 2, &large_doc(2, 250_000), 0).await;
    assert_eq!(tail(store, &r.id).await.0, Some((3, third.clone())));
    assert_eq!(store.stored_bytes(&of_owner).await.unwrap(), stored);
    // Of an epoch before the file's latest take: refused, nothing replaced.
    let epoch = store.take_file(&r.id, 1_000).await.expect("take").epoch;
    assert_err!(
        store
            .write_snapshot(&r.id, t.epoch, 4, &large_doc(4, 150_000), 0)
            .await,
        StoreError::Fenced
    );
    assert_eq!(tail(store, &r.id).await.0, Some((3, third.clone())));
    assert_eq!(store.stored_bytes(&of_owner).await.unwrap(), stored);

    // A small document after a large one, then a large one again.
    write_doc_text(store, &r.id, epoch, 4, "{}", 0).await;
    assert_eq!(tail(store, &r.id).await, (Some((4, "{}".into())), vec![]));
    assert!(store.stored_bytes(&of_owner).await.unwrap() < 10_000);
    let fifth = large_doc(5, 100_000);
    append_one(store, &r.id, epoch, patches(5, 5, 1))
        .await
        .expect("append");
    write_doc_text(store, &r.id, epoch, 5, &fifth, 0).await;
    assert_eq!(tail(store, &r.id).await.0, Some((5, fifth)));

    store.delete_file(&r.id).await.expect("delete");
    assert_eq!(tail(store, &r.id).await, (None, vec![]));
    assert_eq!(store.stored_bytes(&of_owner).await.unwrap(), 0);
}

pub async fn ping_answers(store: &dyn Store) {
    assert!(store.ping().await);
}
