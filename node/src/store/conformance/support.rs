//! What the checks share: new accounts, sessions and files, taking them, and the asserts.

pub(super) use super::logs::{
    append_one, assert_same_log, batch, client, file_append, patch, patches, versions, write_doc,
    write_doc_text,
};
use crate::ids::{random_string, AccountId, FileId};
use crate::store::{Account, FileRecord, LinkAccess, Store};

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

pub(crate) fn record(owner: &AccountId, updated_at: i64) -> FileRecord {
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
        viewers_see_history: false,
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
