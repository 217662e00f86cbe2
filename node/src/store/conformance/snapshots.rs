//! Snapshots and the log behind them, what deleting a file takes with it, and the
//! fidelity of what is stored.

use super::support::{
    account, append_one, assert_err, assert_same_log, file_with_log, new_file, op, patch, patches,
    record, take, versions, write_doc,
};
use crate::ids::{ClientKey, FileId};
use crate::store::{LoggedPatch, Store, StoreError};

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
/// `NotFound`; a new file under the same id starts empty.
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
    let t = store.take_file(&r.id, 1_000).await.expect("take");
    assert_eq!(t.record.version, 0);
    assert_eq!(t.snapshot, None);
    assert!(t.log.is_empty());
    assert_eq!(op(store, &r.id, 1).await, None);
    append_one(store, &t.record.id, t.epoch, patches(1, 1, 1))
        .await
        .expect("a fresh log starts at 1");
}

/// Every field of a patch comes back as it went in: text verbatim (spacing,
/// escapes, non-ASCII), `t` present or absent, all 16 client bytes.
pub async fn patches_round_trip(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let sent = |version, client, op_id, by: &str, ops: &str, t: Option<&str>| LoggedPatch {
        version,
        client: ClientKey(client),
        op_id,
        by: by.into(),
        ops: ops.into(),
        t: t.map(Into::into),
    };
    let want = vec![
        sent(
            1,
            [0xff; 16],
            u64::from(u32::MAX) + 7,
            "person-Ω",
            r#"[ {"set" : "héllo \"wörld\" \u00e9", "n": 1.50} ]"#,
            Some(r#"{"sent":123}"#),
        ),
        sent(2, [0; 16], 0, "", "[]", None),
        sent(
            3,
            std::array::from_fn(|i| i as u8 * 17),
            1,
            "p3",
            "[\n  1,\t2\n]",
            Some("\"t\""),
        ),
        sent(4, [0x5a; 16], u64::MAX, "p4", "[4]", None),
    ];
    append_one(store, &file, epoch, want.clone())
        .await
        .expect("append");
    let t = store.take_file(&file, 10).await.expect("take");
    assert_same_log(&t.log, &want);
    let (_, tail) = store.snapshot_and_tail(&file).await.expect("tail");
    assert_same_log(&tail, &want);
    assert_eq!(
        store
            .client_op(&file, ClientKey([0xff; 16]))
            .await
            .expect("op"),
        Some((u64::from(u32::MAX) + 7, 1))
    );
    assert_eq!(
        store
            .client_op(&file, ClientKey([0x5a; 16]))
            .await
            .expect("op"),
        Some((u64::MAX, 4)),
        "every u64 op id reads back exactly"
    );
    let doc = r#"{"name":"Ünïcode ✓","pages":[{"id":"p1"}]}"#;
    store
        .write_snapshot(&file, t.epoch, 4, doc, 10)
        .await
        .expect("snapshot");
    let (snapshot, _) = store.snapshot_and_tail(&file).await.expect("read");
    assert_eq!(snapshot, Some((4, doc.to_string())));
}

pub async fn ping_answers(store: &dyn Store) {
    assert!(store.ping().await);
}
