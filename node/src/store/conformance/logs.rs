//! Patches and appends as the checks make them, and the asserts on logs.

use std::sync::Arc;

use crate::ids::{ClientKey, FileId};
use crate::store::{FileAppend, LoggedPatch, Store, StoreResult};

pub(super) fn client(n: u8) -> ClientKey {
    let mut key = [0u8; 16];
    for (i, b) in key.iter_mut().enumerate() {
        *b = n.wrapping_mul(31).wrapping_add(i as u8);
    }
    ClientKey(key)
}

pub(crate) fn patch(version: u64, c: u8, op_id: u64) -> LoggedPatch {
    LoggedPatch {
        version,
        client: client(c),
        op_id,
        by: format!("p{c}"),
        ops: format!(r#"[{{"set":"v{version}"}}]"#),
        t: None,
    }
}

/// Patches `from..=to`, all from client `c`, with op ids equal to their versions.
pub(super) fn patches(from: u64, to: u64, c: u8) -> Vec<LoggedPatch> {
    (from..=to).map(|v| patch(v, c, v)).collect()
}

pub(super) fn file_append(file: &FileId, epoch: u64, patches: Vec<LoggedPatch>) -> FileAppend {
    FileAppend {
        file: file.clone(),
        epoch,
        patches,
    }
}

pub(super) fn batch(appends: Vec<FileAppend>) -> Arc<[FileAppend]> {
    appends.into()
}

/// Appends one file's patches and returns its own result.
pub(super) async fn append_one(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    patches: Vec<LoggedPatch>,
) -> StoreResult<()> {
    let mut results = store
        .append(batch(vec![file_append(file, epoch, patches)]))
        .await
        .expect("the batch itself commits");
    assert_eq!(results.len(), 1);
    results.pop().expect("one result")
}

/// Writes the snapshot `"doc{version}"` at `version` under `epoch`, keeping `keep`
/// patches behind it; it must land.
pub(super) async fn write_doc(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    version: u64,
    keep: u64,
) {
    write_doc_text(store, file, epoch, version, &format!("doc{version}"), keep).await;
}

/// Writes `doc` as the file's snapshot at `version`, keeping `keep` patches behind it.
pub(super) async fn write_doc_text(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    version: u64,
    doc: &str,
    keep: u64,
) {
    store
        .write_snapshot(file, epoch, version, doc, keep)
        .await
        .unwrap_or_else(|e| panic!("snapshot {version}: {e}"));
}

pub(super) fn versions(log: &[LoggedPatch]) -> Vec<u64> {
    log.iter().map(|p| p.version).collect()
}

/// Every field of every patch, in order.
pub(super) fn assert_same_log(got: &[LoggedPatch], want: &[LoggedPatch]) {
    assert_eq!(versions(got), versions(want));
    for (got, want) in got.iter().zip(want) {
        assert_eq!(got.version, want.version);
        assert_eq!(got.client, want.client, "client of v{}", want.version);
        assert_eq!(got.op_id, want.op_id, "op id of v{}", want.version);
        assert_eq!(got.by, want.by, "sender of v{}", want.version);
        assert_eq!(got.ops, want.ops, "ops of v{}", want.version);
        assert_eq!(got.t, want.t, "t of v{}", want.version);
    }
}
