//! Accounts and sessions.

use super::support::{account, assert_err, email, session};
use crate::ids::AccountId;
use crate::store::{Store, StoreError};

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

    for again in [typed.to_uppercase(), typed] {
        assert_err!(
            store.create_account(&again, "Eve", "h").await,
            StoreError::Conflict
        );
    }
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
    let da = session(store, &a.id, LATER).await;
    let da2 = session(store, &a.id, LATER).await;
    let db = session(store, &b.id, LATER).await;
    for (digest, owner) in [(da, &a), (da2, &a), (db, &b)] {
        assert_eq!(
            store.session_account(digest).await.expect("session").id,
            owner.id
        );
    }
    assert_eq!(store.session_expiry(da).await.expect("expiry"), LATER);

    store.delete_session(da).await.expect("delete");
    assert_err!(store.session_account(da).await, StoreError::NotFound);
    assert_err!(store.session_expiry(da).await, StoreError::NotFound);
    assert_eq!(
        store.session_account(da2).await.expect("other session").id,
        a.id
    );
    store.delete_session(da).await.expect("delete twice");
    let never = crate::ids::digest(&crate::ids::random_string(32));
    assert_err!(store.session_account(never).await, StoreError::NotFound);
}

/// Sessions expire: past `expires_at` they resolve to nothing and are cleaned up;
/// signing an account out everywhere deletes all of its sessions and only its.
pub async fn sessions_expire_and_end_by_account(store: &dyn Store) {
    let a = account(store).await;
    let b = account(store).await;
    let now = crate::clock::unix_ms();
    let old = session(store, &a.id, now - 1).await;
    let fresh = session(store, &a.id, LATER).await;
    let also = session(store, &a.id, LATER).await;
    let other = session(store, &b.id, LATER).await;
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

/// Trimming an account's sessions keeps the one just made and the newest others, and ends
/// the rest, answering theirs; another account's are untouched.
pub async fn sessions_trimmed_to_the_newest(store: &dyn Store) {
    let a = account(store).await;
    let b = account(store).await;
    let other = session(store, &b.id, LATER).await;
    let mut made = Vec::new();
    for _ in 0..5 {
        made.push(session(store, &a.id, LATER).await);
        // Sessions are ordered by when they were made, to the millisecond.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    // The one just made is kept whatever its time says: here the oldest (a node with a
    // slow clock made it), with the newest other one.
    let mut ended = store.trim_sessions(&a.id, made[0], 2).await.expect("trim");
    ended.sort_unstable();
    let mut between = made[1..4].to_vec();
    between.sort_unstable();
    assert_eq!(ended, between);
    for d in &made[1..4] {
        assert_err!(store.session_account(*d).await, StoreError::NotFound);
    }
    for d in [made[0], made[4]] {
        assert_eq!(store.session_account(d).await.expect("kept").id, a.id);
    }
    let again = store.trim_sessions(&a.id, made[4], 2).await.expect("again");
    assert!(again.is_empty());
    // One kept: the one just made.
    let ended = store.trim_sessions(&a.id, made[4], 1).await.expect("trim");
    assert_eq!(ended, vec![made[0]]);
    assert_eq!(store.session_account(other).await.expect("b's").id, b.id);
}
