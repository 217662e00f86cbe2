//! The fidelity of what is stored: every field of a patch and of a document.

use super::support::{append_one, assert_same_log, new_file, take};
use crate::ids::ClientKey;
use crate::store::{LoggedPatch, Store};

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
