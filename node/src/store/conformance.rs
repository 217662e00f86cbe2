//! The [`Store`] contract as executable checks, for every store.
//!
//! Each check is an async function over `&dyn Store` that makes its own accounts
//! and files (random ids and emails), so checks never depend on one another.
//! [`conformance_suite!`] turns them into one `#[tokio::test]` per check for a
//! store; the embedded store runs them below, the Postgres store in
//! `postgres.rs`.

use std::sync::Arc;

use super::*;
use crate::ids::{random_string, AccountId, ClientKey, FileId};

/// One `#[tokio::test]` per check, each on a store from `$open` (an async
/// expression giving `(Arc<dyn Store>, guard)`; the guard lives until the end of
/// the test, e.g. a temporary folder or database).
macro_rules! conformance_suite {
    ($open:expr) => {
        $crate::store::conformance::conformance_suite!(@each $open;
            accounts_and_email_case,
            sessions,
            sessions_expire_and_end_by_account,
            files_crud,
            file_cap_per_owner,
            take_file_reads_snapshot_and_log,
            take_file_keeps_behind,
            fencing_after_a_second_take,
            gapless_appends,
            one_fenced_file_does_not_fail_the_batch,
            one_file_twice_in_a_batch,
            empty_appends,
            client_op_keeps_the_highest,
            snapshots_never_go_back_and_trim_the_log,
            deleted_file_is_gone_everywhere,
            patches_round_trip,
            ping_answers,
        );
    };
    (@each $open:expr; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let (store, guard) = $open.await;
                $crate::store::conformance::$check(&*store).await;
                drop(store);
                drop(guard);
            }
        )*
    };
}
pub(crate) use conformance_suite;

// ---------------------------------------------------------------- helpers

fn email() -> String {
    format!("Person.{}@Example.COM", random_string(12))
}

async fn account(store: &dyn Store) -> Account {
    store
        .create_account(&email(), "Someone", "hash")
        .await
        .expect("create account")
}

/// The digest of a new random session token.
fn token() -> [u8; 32] {
    crate::ids::digest(&random_string(32))
}

fn record(owner: &AccountId, updated_at: i64) -> FileRecord {
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

fn client(n: u8) -> ClientKey {
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
fn patches(from: u64, to: u64, c: u8) -> Vec<LoggedPatch> {
    (from..=to).map(|v| patch(v, c, v)).collect()
}

fn batch(appends: Vec<FileAppend>) -> Arc<[FileAppend]> {
    appends.into()
}

fn one(file: &FileId, epoch: u64, patches: Vec<LoggedPatch>) -> Arc<[FileAppend]> {
    batch(vec![FileAppend {
        file: file.clone(),
        epoch,
        patches,
    }])
}

/// Appends one file's patches and returns its own result.
async fn append_one(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    patches: Vec<LoggedPatch>,
) -> StoreResult<()> {
    let mut results = store
        .append(one(file, epoch, patches))
        .await
        .expect("the batch itself commits");
    assert_eq!(results.len(), 1);
    results.pop().expect("one result")
}

fn versions(log: &[LoggedPatch]) -> Vec<u64> {
    log.iter().map(|p| p.version).collect()
}

fn assert_same_patch(got: &LoggedPatch, want: &LoggedPatch) {
    assert_eq!(got.version, want.version);
    assert_eq!(got.client, want.client, "client of v{}", want.version);
    assert_eq!(got.op_id, want.op_id, "op id of v{}", want.version);
    assert_eq!(got.by, want.by, "sender of v{}", want.version);
    assert_eq!(got.ops, want.ops, "ops of v{}", want.version);
    assert_eq!(got.t, want.t, "t of v{}", want.version);
}

fn assert_same_log(got: &[LoggedPatch], want: &[LoggedPatch]) {
    assert_eq!(versions(got), versions(want));
    for (g, w) in got.iter().zip(want) {
        assert_same_patch(g, w);
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

// ---------------------------------------------------------------- checks

/// Accounts: created as typed, found by id and by email in any case; a second
/// account with the same email in another case is a conflict.
pub async fn accounts_and_email_case(store: &dyn Store) {
    let typed = email();
    let a = store
        .create_account(&typed, "Ada", "argon2-hash")
        .await
        .expect("create account");
    assert_eq!(a.email, typed);

    for probe in [typed.clone(), typed.to_lowercase(), typed.to_uppercase()] {
        let found = store.account_by_email(&probe).await.expect("by email");
        assert_eq!(found.id, a.id);
        assert_eq!(found.email, typed, "the email is kept as typed");
        assert_eq!(found.name, "Ada");
        assert_eq!(found.password_hash, "argon2-hash");
    }
    let by_id = store.account_by_id(&a.id).await.expect("by id");
    assert_eq!(by_id.email, typed);

    assert_err!(
        store
            .create_account(&typed.to_uppercase(), "Eve", "h")
            .await,
        StoreError::Conflict
    );
    assert_err!(
        store.create_account(&typed, "Eve", "h").await,
        StoreError::Conflict
    );
    assert_err!(store.account_by_email(&email()).await, StoreError::NotFound);
    assert_err!(
        store.account_by_id(&AccountId::generate()).await,
        StoreError::NotFound
    );
}

/// Far in the future (Unix ms): a session that does not expire during a test.
const LATER: i64 = i64::MAX / 2;

/// Sessions by token digest: created, resolved to their account, deleted; deleting
/// twice is fine.
pub async fn sessions(store: &dyn Store) {
    let a = account(store).await;
    let b = account(store).await;
    let (da, da2, db) = (token(), token(), token());

    store
        .create_session(da, &a.id, LATER)
        .await
        .expect("session a");
    store
        .create_session(da2, &a.id, LATER)
        .await
        .expect("session a2");
    store
        .create_session(db, &b.id, LATER)
        .await
        .expect("session b");
    assert_eq!(store.session_account(da).await.expect("a").id, a.id);
    assert_eq!(store.session_account(da2).await.expect("a2").id, a.id);
    assert_eq!(store.session_account(db).await.expect("b").id, b.id);
    assert_eq!(store.session_expiry(da).await.expect("expiry"), LATER);

    store.delete_session(da).await.expect("delete");
    assert_err!(store.session_account(da).await, StoreError::NotFound);
    assert_err!(store.session_expiry(da).await, StoreError::NotFound);
    assert_eq!(
        store.session_account(da2).await.expect("other session").id,
        a.id
    );
    store.delete_session(da).await.expect("delete twice");
    assert_err!(store.session_account(token()).await, StoreError::NotFound);
}

/// Sessions expire: past `expires_at` they resolve to nothing and are cleaned up;
/// signing an account out everywhere deletes all of its sessions and only its.
pub async fn sessions_expire_and_end_by_account(store: &dyn Store) {
    let a = account(store).await;
    let b = account(store).await;
    let now = crate::clock::unix_ms();
    let (old, fresh, other, also) = (token(), token(), token(), token());
    store
        .create_session(old, &a.id, now - 1)
        .await
        .expect("expired");
    store
        .create_session(fresh, &a.id, LATER)
        .await
        .expect("fresh");
    store
        .create_session(also, &a.id, LATER)
        .await
        .expect("also");
    store
        .create_session(other, &b.id, LATER)
        .await
        .expect("other");
    assert_err!(store.session_account(old).await, StoreError::NotFound);
    assert_err!(store.session_expiry(old).await, StoreError::NotFound);
    assert!(store.delete_expired_sessions().await.expect("cleanup") >= 1);
    let mut gone = store.delete_sessions_of(&a.id).await.expect("sign out all");
    gone.sort_unstable();
    let mut want = vec![fresh, also];
    want.sort_unstable();
    assert_eq!(gone, want, "the expired one was cleaned up already");
    assert_err!(store.session_account(fresh).await, StoreError::NotFound);
    assert_err!(store.session_account(also).await, StoreError::NotFound);
    assert_eq!(store.session_account(other).await.expect("b's").id, b.id);
    assert!(store
        .delete_sessions_of(&a.id)
        .await
        .expect("again")
        .is_empty());
}

/// The cap on files an owner has: creations past it are `Full` and change
/// nothing; other owners are not affected; a deletion makes room; creations
/// racing each other never pass the cap.
pub async fn file_cap_per_owner(store: &dyn Store) {
    let a = account(store).await;
    for i in 0..3 {
        store
            .create_file_capped(&record(&a.id, i), None, 3)
            .await
            .expect("under the cap");
    }
    let over = record(&a.id, 9);
    assert_err!(
        store.create_file_capped(&over, None, 3).await,
        StoreError::Full
    );
    assert_err!(store.file(&over.id).await, StoreError::NotFound);
    assert_eq!(store.files_of(&a.id).await.expect("list").len(), 3);
    // Uncapped creation is not counted against anyone else's cap.
    let b = account(store).await;
    store
        .create_file_capped(&record(&b.id, 1), None, 3)
        .await
        .expect("another owner");
    let first = store.files_of(&a.id).await.expect("list")[0].id.clone();
    store.delete_file(&first).await.expect("delete");
    store
        .create_file_capped(&record(&a.id, 10), None, 3)
        .await
        .expect("a deletion made room");

    // Twelve creations at once for an owner with a cap of 5: exactly 5 land.
    let c = account(store).await;
    let records: Vec<FileRecord> = (0..12).map(|i| record(&c.id, i)).collect();
    let results = futures_util::future::join_all(
        records
            .iter()
            .map(|r| store.create_file_capped(r, Some("{}".into()), 5)),
    )
    .await;
    let landed = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(landed, 5, "{results:?}");
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(()) | Err(StoreError::Full))),
        "{results:?}"
    );
    assert_eq!(store.files_of(&c.id).await.expect("list").len(), 5);
}

/// Files: create (a duplicate id conflicts), read, list by owner newest first,
/// update each field, delete.
pub async fn files_crud(store: &dyn Store) {
    let owner = account(store).await;
    let other = account(store).await;
    let older = record(&owner.id, 1_000);
    let newer = record(&owner.id, 2_000);
    store
        .create_file(&older, Some(r#"{"hello":1}"#.into()))
        .await
        .expect("create older");
    store.create_file(&newer, None).await.expect("create newer");
    assert_err!(store.create_file(&older, None).await, StoreError::Conflict);

    let got = store.file(&older.id).await.expect("file");
    assert_eq!(got.id, older.id);
    assert_eq!(got.owner, owner.id);
    assert_eq!(got.name, older.name);
    assert_eq!(got.link, LinkAccess::None);
    assert_eq!(got.view_key, older.view_key);
    assert_eq!(got.edit_key, older.edit_key);
    assert_eq!(got.key_generation, 0);
    assert_eq!(got.version, 0);
    assert_eq!(got.updated_at, 1_000);

    let listed: Vec<FileId> = store
        .files_of(&owner.id)
        .await
        .expect("files of")
        .into_iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(listed, vec![newer.id.clone(), older.id.clone()]);
    assert!(store.files_of(&other.id).await.expect("none").is_empty());

    let unchanged = store
        .update_file(&older.id, FileUpdate::default())
        .await
        .expect("empty update");
    assert_eq!(unchanged.name, older.name);
    assert_eq!(unchanged.updated_at, 1_000);

    let renamed = store
        .update_file(
            &older.id,
            FileUpdate {
                name: Some("Renamed".into()),
                ..FileUpdate::default()
            },
        )
        .await
        .expect("rename");
    assert_eq!(renamed.name, "Renamed");
    assert_eq!(renamed.key_generation, 0);
    assert!(renamed.updated_at > 1_000, "a change moves updated_at");

    let linked = store
        .update_file(
            &older.id,
            FileUpdate {
                link: Some(LinkAccess::Edit),
                ..FileUpdate::default()
            },
        )
        .await
        .expect("link");
    assert_eq!(linked.link, LinkAccess::Edit);
    assert_eq!(linked.name, "Renamed");

    let rotated = store
        .update_file(
            &older.id,
            FileUpdate {
                keys: Some(("view2".into(), "edit2".into())),
                ..FileUpdate::default()
            },
        )
        .await
        .expect("rotate");
    assert_eq!(rotated.view_key, "view2");
    assert_eq!(rotated.edit_key, "edit2");
    assert_eq!(rotated.key_generation, 1);
    assert_eq!(rotated.link, LinkAccess::Edit);
    let again = store.file(&older.id).await.expect("reread");
    assert_eq!(again.key_generation, 1);
    assert_eq!(again.view_key, "view2");

    assert_err!(
        store
            .update_file(&FileId::generate(), FileUpdate::default())
            .await,
        StoreError::NotFound
    );
    assert_err!(store.file(&FileId::generate()).await, StoreError::NotFound);

    store.delete_file(&older.id).await.expect("delete");
    assert_err!(store.file(&older.id).await, StoreError::NotFound);
    assert_err!(store.delete_file(&older.id).await, StoreError::NotFound);
    let left: Vec<FileId> = store
        .files_of(&owner.id)
        .await
        .expect("files of")
        .into_iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(left, vec![newer.id]);
}

/// Taking a file raises its epoch and hands back the record, the initial document
/// as the version-0 snapshot, and the log.
pub async fn take_file_reads_snapshot_and_log(store: &dyn Store) {
    let owner = account(store).await;
    let with_doc = record(&owner.id, 1_000);
    store
        .create_file(&with_doc, Some(r#"{"a":1}"#.into()))
        .await
        .expect("create");
    let taken = store.take_file(&with_doc.id, 100).await.expect("take");
    assert!(taken.epoch >= 1);
    assert_eq!(taken.record.id, with_doc.id);
    assert_eq!(taken.record.version, 0);
    assert_eq!(taken.snapshot, Some((0, r#"{"a":1}"#.to_string())));
    assert!(taken.log.is_empty());

    let want = patches(1, 3, 7);
    append_one(store, &with_doc.id, taken.epoch, want.clone())
        .await
        .expect("append");
    let again = store
        .take_file(&with_doc.id, 100)
        .await
        .expect("take again");
    assert!(again.epoch > taken.epoch);
    assert_eq!(again.record.version, 3);
    assert_eq!(again.snapshot, Some((0, r#"{"a":1}"#.to_string())));
    assert_same_log(&again.log, &want);

    let (_, bare) = new_file(store).await;
    let taken = store.take_file(&bare, 0).await.expect("take bare");
    assert_eq!(taken.snapshot, None);
    assert!(taken.log.is_empty());

    assert_err!(
        store.take_file(&FileId::generate(), 0).await,
        StoreError::NotFound
    );
}

/// `behind` patches before the snapshot come back with the log, for resume.
pub async fn take_file_keeps_behind(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let t = store.take_file(&file, 0).await.expect("take");
    append_one(store, &file, t.epoch, patches(1, 10, 1))
        .await
        .expect("append");
    // Keep everything so `behind` alone decides what comes back.
    store
        .write_snapshot(&file, t.epoch, 6, "doc6", 100)
        .await
        .expect("snapshot");
    let t = store.take_file(&file, 0).await.expect("take");
    assert_eq!(t.snapshot, Some((6, "doc6".to_string())));
    assert_eq!(versions(&t.log), vec![7, 8, 9, 10]);
    let t = store.take_file(&file, 2).await.expect("take");
    assert_eq!(versions(&t.log), vec![5, 6, 7, 8, 9, 10]);
    let t = store.take_file(&file, 1_000).await.expect("take");
    assert_eq!(versions(&t.log), (1..=10).collect::<Vec<_>>());
    let t = store.take_file(&file, u64::MAX).await.expect("take");
    assert_eq!(versions(&t.log), (1..=10).collect::<Vec<_>>());
}

/// After a second take, every write under the first epoch is fenced; the second
/// taker's writes land.
pub async fn fencing_after_a_second_take(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let first = store.take_file(&file, 0).await.expect("first take");
    append_one(store, &file, first.epoch, patches(1, 2, 1))
        .await
        .expect("the first taker appends while it owns the file");
    assert_eq!(store.epoch(&file).await.expect("epoch"), first.epoch);
    let second = store.take_file(&file, 0).await.expect("second take");
    assert!(second.epoch > first.epoch);
    assert_eq!(versions(&second.log), vec![1, 2]);
    // What a first taker whose lease lapsed checks before taking it back: not its epoch now.
    assert_eq!(store.epoch(&file).await.expect("epoch"), second.epoch);

    assert_err!(
        append_one(store, &file, first.epoch, vec![patch(3, 9, 100)]).await,
        StoreError::Fenced
    );
    assert_err!(
        store
            .write_snapshot(&file, first.epoch, 2, "stale", 0)
            .await,
        StoreError::Fenced
    );
    assert_eq!(store.client_op(&file, client(9)).await.expect("op"), None);
    assert_eq!(store.file(&file).await.expect("file").version, 2);

    append_one(store, &file, second.epoch, vec![patch(3, 2, 1)])
        .await
        .expect("the second taker appends");
    store
        .write_snapshot(&file, second.epoch, 3, "doc3", 10)
        .await
        .expect("the second taker snapshots");
    // A fenced snapshot left nothing behind, and its trim did not run.
    let (snapshot, tail) = store.snapshot_and_tail(&file).await.expect("read");
    assert_eq!(snapshot, Some((3, "doc3".to_string())));
    assert!(tail.is_empty());
    let t = store.take_file(&file, 10).await.expect("take");
    assert_eq!(versions(&t.log), vec![1, 2, 3]);
    assert_eq!(t.log[2].client, client(2));

    // A third take fences the second taker as well.
    let third = store.take_file(&file, 0).await.expect("third take");
    assert_err!(
        append_one(store, &file, second.epoch, vec![patch(4, 2, 2)]).await,
        StoreError::Fenced
    );
    append_one(store, &file, third.epoch, vec![patch(4, 3, 1)])
        .await
        .expect("the third taker appends");
}

/// Versions are gapless: an append must start right after the last durable
/// version; anything else (a gap, an overlap) is refused and changes nothing.
pub async fn gapless_appends(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let t = store.take_file(&file, 0).await.expect("take");
    let mut want = patches(1, 3, 1);
    append_one(store, &file, t.epoch, want.clone())
        .await
        .expect("1..=3");

    // A gap.
    assert_err!(
        append_one(store, &file, t.epoch, vec![patch(5, 2, 1)]).await,
        StoreError::Fenced
    );
    // An overlap with a different patch at a durable version.
    assert_err!(
        append_one(store, &file, t.epoch, vec![patch(3, 2, 1)]).await,
        StoreError::Fenced
    );
    assert_err!(
        append_one(
            store,
            &file,
            t.epoch,
            vec![patch(2, 2, 1), patch(3, 2, 2), patch(4, 2, 3)]
        )
        .await,
        StoreError::Fenced
    );
    // Starting over from 1.
    assert_err!(
        append_one(store, &file, t.epoch, vec![patch(1, 2, 1)]).await,
        StoreError::Fenced
    );
    assert_eq!(store.file(&file).await.expect("file").version, 3);
    assert_eq!(store.client_op(&file, client(2)).await.expect("op"), None);

    let more = vec![patch(4, 2, 1), patch(5, 2, 2)];
    append_one(store, &file, t.epoch, more.clone())
        .await
        .expect("4..=5");
    want.extend(more);
    assert_eq!(store.file(&file).await.expect("file").version, 5);
    let t = store.take_file(&file, 100).await.expect("take");
    assert_same_log(&t.log, &want);
}

/// A group commit fences each file on its own: a fenced file and a deleted file
/// fail alone, the others land.
pub async fn one_fenced_file_does_not_fail_the_batch(store: &dyn Store) {
    let (_, stale) = new_file(store).await;
    let (_, good) = new_file(store).await;
    let (_, gone) = new_file(store).await;
    let (_, gapped) = new_file(store).await;
    let stale_epoch = store.take_file(&stale, 0).await.expect("take").epoch;
    store
        .take_file(&stale, 0)
        .await
        .expect("someone else takes");
    let good_epoch = store.take_file(&good, 0).await.expect("take").epoch;
    let gone_epoch = store.take_file(&gone, 0).await.expect("take").epoch;
    store.delete_file(&gone).await.expect("delete");
    let gapped_epoch = store.take_file(&gapped, 0).await.expect("take").epoch;

    let results = store
        .append(batch(vec![
            FileAppend {
                file: stale.clone(),
                epoch: stale_epoch,
                patches: patches(1, 2, 1),
            },
            FileAppend {
                file: good.clone(),
                epoch: good_epoch,
                patches: patches(1, 3, 2),
            },
            FileAppend {
                file: gone.clone(),
                epoch: gone_epoch,
                patches: patches(1, 1, 3),
            },
            FileAppend {
                file: gapped.clone(),
                epoch: gapped_epoch,
                patches: patches(2, 3, 4),
            },
        ]))
        .await
        .expect("the batch commits");
    assert_eq!(results.len(), 4);
    assert_err!(&results[0], StoreError::Fenced);
    assert!(results[1].is_ok(), "the good file lands: {:?}", results[1]);
    assert_err!(&results[2], StoreError::NotFound);
    assert_err!(&results[3], StoreError::Fenced);

    assert_eq!(store.file(&stale).await.expect("stale").version, 0);
    assert_eq!(store.client_op(&stale, client(1)).await.expect("op"), None);
    assert_eq!(store.file(&gapped).await.expect("gapped").version, 0);
    assert_eq!(store.file(&good).await.expect("good").version, 3);
    assert_eq!(
        store.client_op(&good, client(2)).await.expect("op"),
        Some((3, 3))
    );
    let t = store.take_file(&good, 10).await.expect("take good");
    assert_same_log(&t.log, &patches(1, 3, 2));
    let t = store.take_file(&stale, 10).await.expect("take stale");
    assert!(t.log.is_empty());
}

/// One room's consecutive turns can share a batch; the second builds on the first.
pub async fn one_file_twice_in_a_batch(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = store.take_file(&file, 0).await.expect("take").epoch;
    let results = store
        .append(batch(vec![
            FileAppend {
                file: file.clone(),
                epoch,
                patches: patches(1, 2, 1),
            },
            FileAppend {
                file: file.clone(),
                epoch,
                patches: patches(3, 5, 1),
            },
        ]))
        .await
        .expect("commit");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(store.file(&file).await.expect("file").version, 5);
    assert_eq!(
        store.client_op(&file, client(1)).await.expect("op"),
        Some((5, 5))
    );
}

/// Empty appends (and an empty batch) are fine and change nothing.
pub async fn empty_appends(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = store.take_file(&file, 0).await.expect("take").epoch;
    assert!(store
        .append(batch(Vec::new()))
        .await
        .expect("empty batch")
        .is_empty());
    append_one(store, &file, epoch, Vec::new())
        .await
        .expect("no patches");
    assert_eq!(store.file(&file).await.expect("file").version, 0);
}

/// The highest op id per client and file is kept with its version, whatever order
/// the patches came in.
pub async fn client_op_keeps_the_highest(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let (_, other) = new_file(store).await;
    let epoch = store.take_file(&file, 0).await.expect("take").epoch;
    let other_epoch = store.take_file(&other, 0).await.expect("take").epoch;
    assert_eq!(store.client_op(&file, client(1)).await.expect("op"), None);

    append_one(
        store,
        &file,
        epoch,
        vec![
            patch(1, 1, 5),
            patch(2, 2, 1),
            patch(3, 1, 3),
            patch(4, 2, 2),
        ],
    )
    .await
    .expect("append");
    assert_eq!(
        store.client_op(&file, client(1)).await.expect("op"),
        Some((5, 1))
    );
    assert_eq!(
        store.client_op(&file, client(2)).await.expect("op"),
        Some((2, 4))
    );

    append_one(store, &file, epoch, vec![patch(5, 1, 4)])
        .await
        .expect("a lower op id");
    assert_eq!(
        store.client_op(&file, client(1)).await.expect("op"),
        Some((5, 1)),
        "a lower op id never replaces a higher one"
    );
    append_one(store, &file, epoch, vec![patch(6, 1, 9)])
        .await
        .expect("a higher op id");
    assert_eq!(
        store.client_op(&file, client(1)).await.expect("op"),
        Some((9, 6))
    );

    // Per file: the same client elsewhere is counted apart.
    append_one(store, &other, other_epoch, vec![patch(1, 1, 2)])
        .await
        .expect("other file");
    assert_eq!(
        store.client_op(&other, client(1)).await.expect("op"),
        Some((2, 1))
    );
    assert_eq!(
        store.client_op(&file, client(1)).await.expect("op"),
        Some((9, 6))
    );
    assert_eq!(store.client_op(&file, client(3)).await.expect("op"), None);
    assert_eq!(
        store
            .client_op(&FileId::generate(), client(1))
            .await
            .expect("op"),
        None
    );
}

/// A snapshot never replaces one of a higher version; writing one trims the log
/// to `keep` patches behind it; the tail after it comes back in order.
pub async fn snapshots_never_go_back_and_trim_the_log(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = store.take_file(&file, 0).await.expect("take").epoch;
    append_one(store, &file, epoch, patches(1, 10, 1))
        .await
        .expect("append");

    store
        .write_snapshot(&file, epoch, 8, "doc8", 3)
        .await
        .expect("snapshot 8");
    let (snapshot, tail) = store.snapshot_and_tail(&file).await.expect("read");
    assert_eq!(snapshot, Some((8, "doc8".to_string())));
    assert_same_log(&tail, &patches(9, 10, 1));
    // Trimmed to 3 behind the snapshot: 6, 7 and 8 stay.
    let t = store.take_file(&file, 1_000).await.expect("take");
    let epoch = t.epoch;
    assert_eq!(t.snapshot, Some((8, "doc8".to_string())));
    assert_eq!(versions(&t.log), vec![6, 7, 8, 9, 10]);

    // An older snapshot is accepted but replaces nothing.
    store
        .write_snapshot(&file, epoch, 5, "doc5", 3)
        .await
        .expect("older snapshot");
    let (snapshot, tail) = store.snapshot_and_tail(&file).await.expect("read");
    assert_eq!(snapshot, Some((8, "doc8".to_string())));
    assert_eq!(versions(&tail), vec![9, 10]);

    // A keep larger than the version trims nothing.
    store
        .write_snapshot(&file, epoch, 9, "doc9", 100)
        .await
        .expect("snapshot 9");
    let t = store.take_file(&file, 1_000).await.expect("take");
    let epoch = t.epoch;
    assert_eq!(t.snapshot, Some((9, "doc9".to_string())));
    assert_eq!(versions(&t.log), vec![6, 7, 8, 9, 10]);

    // keep = 0 trims up to the snapshot itself.
    store
        .write_snapshot(&file, epoch, 10, "doc10", 0)
        .await
        .expect("snapshot 10");
    let t = store.take_file(&file, 1_000).await.expect("take");
    assert_eq!(t.snapshot, Some((10, "doc10".to_string())));
    assert!(t.log.is_empty());
    let (snapshot, tail) = store.snapshot_and_tail(&file).await.expect("read");
    assert_eq!(snapshot, Some((10, "doc10".to_string())));
    assert!(tail.is_empty());

    // Appends go on after the snapshot.
    append_one(store, &file, t.epoch, patches(11, 12, 2))
        .await
        .expect("append after");
    let (_, tail) = store.snapshot_and_tail(&file).await.expect("read");
    assert_same_log(&tail, &patches(11, 12, 2));

    assert_err!(
        store
            .write_snapshot(&FileId::generate(), 1, 1, "x", 0)
            .await,
        StoreError::NotFound
    );
    // A file with no snapshot: the whole log is the tail.
    let (_, fresh) = new_file(store).await;
    let e = store.take_file(&fresh, 0).await.expect("take").epoch;
    append_one(store, &fresh, e, patches(1, 2, 1))
        .await
        .expect("append");
    let (snapshot, tail) = store.snapshot_and_tail(&fresh).await.expect("read");
    assert_eq!(snapshot, None);
    assert_eq!(versions(&tail), vec![1, 2]);
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
    let epoch = store.take_file(&r.id, 0).await.expect("take").epoch;
    append_one(store, &r.id, epoch, patches(1, 4, 1))
        .await
        .expect("append");
    store
        .write_snapshot(&r.id, epoch, 3, "doc3", 1)
        .await
        .expect("snapshot");
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
    assert_eq!(store.client_op(&r.id, client(1)).await.expect("op"), None);
    let (snapshot, tail) = store.snapshot_and_tail(&r.id).await.expect("read");
    assert_eq!(snapshot, None);
    assert!(tail.is_empty());

    store.create_file(&r, None).await.expect("recreate");
    let t = store.take_file(&r.id, 1_000).await.expect("take");
    assert_eq!(t.record.version, 0);
    assert_eq!(t.snapshot, None);
    assert!(t.log.is_empty());
    assert_eq!(store.client_op(&r.id, client(1)).await.expect("op"), None);
    append_one(store, &t.record.id, t.epoch, patches(1, 1, 1))
        .await
        .expect("a fresh log starts at 1");
}

/// Every field of a patch comes back as it went in: text verbatim (spacing,
/// escapes, non-ASCII), `t` present or absent, all 16 client bytes.
pub async fn patches_round_trip(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = store.take_file(&file, 0).await.expect("take").epoch;
    let want = vec![
        LoggedPatch {
            version: 1,
            client: ClientKey([0xff; 16]),
            op_id: u64::from(u32::MAX) + 7,
            by: "person-Ω".into(),
            ops: r#"[ {"set" : "héllo \"wörld\" \u00e9", "n": 1.50} ]"#.into(),
            t: Some(r#"{"sent":123}"#.into()),
        },
        LoggedPatch {
            version: 2,
            client: ClientKey([0; 16]),
            op_id: 0,
            by: String::new(),
            ops: "[]".into(),
            t: None,
        },
        LoggedPatch {
            version: 3,
            client: ClientKey(std::array::from_fn(|i| i as u8 * 17)),
            op_id: 1,
            by: "p3".into(),
            ops: "[\n  1,\t2\n]".into(),
            t: Some("\"t\"".into()),
        },
        LoggedPatch {
            version: 4,
            client: ClientKey([0x5a; 16]),
            op_id: u64::MAX,
            by: "p4".into(),
            ops: "[4]".into(),
            t: None,
        },
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

// ---------------------------------------------------------------- the embedded store

mod sqlite {
    use std::sync::Arc;

    use crate::store::sqlite::SqliteStore;
    use crate::store::Store;

    async fn open() -> (Arc<dyn Store>, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("temporary folder");
        let store = SqliteStore::open(dir.path()).expect("open the embedded store");
        (Arc::new(store), dir)
    }

    crate::store::conformance::conformance_suite!(open());
}
