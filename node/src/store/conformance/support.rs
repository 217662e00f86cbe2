//! What the checks share: new accounts, files and patches, and the asserts on them.

use std::sync::Arc;

use crate::ids::{random_string, AccountId, ClientKey, FileId};
use crate::store::{Account, FileAppend, FileRecord, LinkAccess, LoggedPatch, Store, StoreResult};

pub(super) fn email() -> String {
    format!("Person.{}@Example.COM", random_string(12))
}

pub(super) async fn account(store: &dyn Store) -> Account {
    store
        .create_account(&email(), "Someone", "hash")
        .await
        .expect("create account")
}

/// A new session of `account` that works until `expires_at`; answers its token's digest.
pub(super) async fn session(store: &dyn Store, account: &AccountId, expires_at: i64) -> [u8; 32] {
    let digest = crate::ids::digest(&random_string(32));
    store
        .create_session(digest, account, expires_at)
        .await
        .expect("create session");
    digest
}

pub(super) fn record(owner: &AccountId, updated_at: i64) -> FileRecord {
    FileRecord {
        id: FileId::generate(),
        owner: owner.clone(),
        name: "Untitled".into(),
        link: LinkAccess::None,
        view_key: random_string(32),
        edit_key: random_string(32),
        key_generation: 0,
        version: 0,
        updated_at,
    }
}

/// A new account and a file of it (no initial document).
pub(crate) async fn new_file(store: &dyn Store) -> (Account, FileId) {
    let owner = account(store).await;
    let r = record(&owner.id, 1_000);
    store.create_file(&r, None).await.expect("create file");
    (owner, r.id)
}

/// A new file, taken, with patches 1 to `to` of client 1 in its log; answers the file
/// and its epoch.
pub(super) async fn file_with_log(store: &dyn Store, to: u64) -> (FileId, u64) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    append_one(store, &file, epoch, patches(1, to, 1))
        .await
        .expect("append");
    (file, epoch)
}

/// Takes a file (keeping nothing behind its snapshot) and answers the new epoch.
pub(super) async fn take(store: &dyn Store, file: &FileId) -> u64 {
    store.take_file(file, 0).await.expect("take").epoch
}

/// The versions of the log a take with `behind` hands back.
pub(super) async fn taken_log(store: &dyn Store, file: &FileId, behind: u64) -> Vec<u64> {
    versions(&store.take_file(file, behind).await.expect("take").log)
}

/// The file's last durable version.
pub(super) async fn version(store: &dyn Store, file: &FileId) -> u64 {
    store.file(file).await.expect("file").version
}

/// The highest op id of client `c` in a file, with its version.
pub(super) async fn op(store: &dyn Store, file: &FileId, c: u8) -> Option<(u64, u64)> {
    store.client_op(file, client(c)).await.expect("op")
}

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
    let doc = format!("doc{version}");
    store
        .write_snapshot(file, epoch, version, &doc, keep)
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

macro_rules! assert_err {
    ($result:expr, $pattern:pat) => {
        match $result {
            Err($pattern) => {}
            other => panic!(
                "expected Err({}), got {:?}",
                stringify!($pattern),
                other.as_ref().map(|_| ())
            ),
        }
    };
}
pub(super) use assert_err;
