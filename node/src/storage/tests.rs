use std::sync::Arc;
use std::time::Duration;

use super::{Share, Storage, StorageError};
use crate::apptoken::owner_for;
use crate::ids::{random_string, AccountId};
use crate::store::sqlite::SqliteStore;
use crate::store::{Holder, Store};

/// A store with one account owning one file whose document is `doc_bytes` long.
async fn owner_with_doc(doc_bytes: usize) -> (Arc<dyn Store>, AccountId, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).expect("open"));
    let email = format!("{}@example.com", random_string(10));
    let owner = store
        .create_account(&email, "Ada", "hash")
        .await
        .unwrap()
        .id;
    let record = crate::store::conformance::record(&owner, 1);
    let doc = format!(r#"{{"n1":{{"t":"{}"}}}}"#, "x".repeat(doc_bytes - 15));
    assert_eq!(doc.len(), doc_bytes);
    store.create_file(&record, Some(doc)).await.unwrap();
    (store, owner, dir)
}

#[tokio::test]
async fn a_request_is_refused_once_it_would_pass_the_limit() {
    let (store, owner, _dir) = owner_with_doc(600).await;
    let metrics = crate::metrics::Metrics::new();
    let storage = Storage::new(1_000, store, &metrics);
    storage
        .check(&owner, 400, "create")
        .await
        .expect("600 + 400 fits");
    let over = storage.check(&owner, 401, "create").await;
    assert!(matches!(over, Err(StorageError::Full)), "{over:?}");
    let refused = metrics
        .storage_refusals
        .with_label_values(&["create"])
        .get();
    assert_eq!(refused, 1);
    // Other accounts and the app's own are measured apart, or not at all.
    let stranger = AccountId::generate();
    storage.check(&stranger, 1_000, "create").await.unwrap();
    storage
        .check(&owner_for(None), u64::MAX / 2, "create")
        .await
        .unwrap();
}

#[tokio::test]
async fn rooms_are_answered_from_the_last_measure_and_what_was_added_since() {
    let (store, owner, _dir) = owner_with_doc(600).await;
    let owner = Holder::Account(owner);
    let metrics = crate::metrics::Metrics::new();
    let storage = Arc::new(Storage::new(1_000, store, &metrics));
    // Unknown yet: allowed, and a measure starts in the background.
    assert!(storage.may_grow(&owner, 900, Share::Whole));
    let mut waited = Duration::ZERO;
    while storage.may_grow(&owner, 401, Share::Whole) {
        assert!(waited < Duration::from_secs(5), "the measure never landed");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += Duration::from_millis(10);
    }
    assert!(storage.may_grow(&owner, 400, Share::Whole));
    // People who came by the link fill half: 600 kept already, at a limit of 1,000.
    assert!(!storage.may_grow(&owner, 1, Share::Link));
    // What the room adds counts until a measure includes it.
    storage.added(&owner, 300);
    assert!(storage.may_grow(&owner, 100, Share::Whole));
    assert!(!storage.may_grow(&owner, 101, Share::Whole));
}

#[tokio::test]
async fn requests_at_once_share_one_measure_and_add_up() {
    let (store, owner, _dir) = owner_with_doc(600).await;
    let metrics = crate::metrics::Metrics::new();
    let storage = Storage::new(1_000, store, &metrics);
    storage
        .check(&owner, 300, "create")
        .await
        .expect("600 + 300 fits");
    // The store still holds 600 (nothing was written): the second request uses the first's
    // measure, with its 300, so it does not fit.
    let over = storage.check(&owner, 101, "create").await;
    assert!(matches!(over, Err(StorageError::Full)), "{over:?}");
}

#[test]
fn a_measure_that_began_earlier_never_replaces_a_later_one() {
    let mut o = super::Owner {
        added: 500,
        ..Default::default()
    };
    o.landed(500, 2_000); // began after 500 bytes were added
    o.added = 700;
    assert_eq!(o.used(), Some(2_200));
    o.landed(100, 1_000); // began earlier, landed later: stale
    assert_eq!(o.used(), Some(2_200));
    o.landed(700, 2_300); // began later: kept
    assert_eq!(o.used(), Some(2_300));
}

#[tokio::test]
async fn without_a_limit_everything_grows() {
    let metrics = crate::metrics::Metrics::new();
    let storage = Arc::new(Storage::unlimited(&metrics));
    let owner = AccountId::generate();
    let holder = Holder::Account(owner.clone());
    storage.added(&holder, u64::MAX / 2);
    assert!(storage.may_grow(&holder, u64::MAX / 2, Share::Whole));
    storage.check(&owner, u64::MAX, "create").await.unwrap();
}

#[tokio::test]
async fn the_apps_files_hold_the_links_guests_to_a_share_each() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path()).expect("open"));
    let app = owner_for(None);
    let account = crate::store::Account {
        id: app.clone(),
        email: "app".into(),
        name: "App".into(),
        password_hash: "!".into(),
    };
    store.insert_account(&account).await.unwrap();
    let (full, roomy) = (
        crate::store::conformance::record(&app, 1),
        crate::store::conformance::record(&app, 2),
    );
    let doc = |bytes: usize| format!(r#"{{"n1":{{"t":"{}"}}}}"#, "x".repeat(bytes - 15));
    store.create_file(&full, Some(doc(600))).await.unwrap();
    store.create_file(&roomy, Some(doc(100))).await.unwrap();
    let metrics = crate::metrics::Metrics::new();
    let storage = Arc::new(Storage::new(1_000, store, &metrics));
    let (full, roomy) = (storage.holder(&full), storage.holder(&roomy));
    assert!(matches!(&full, Holder::File(_)), "{full:?}");
    // The app itself, and those it grants the file to, are never held.
    assert!(storage.may_grow(&full, u64::MAX / 2, Share::Whole));
    storage
        .check_share(&full, u64::MAX / 2, "version", Share::Whole)
        .await
        .unwrap();
    // The link's guests: half the limit, of each file's own bytes.
    let over = storage.check_share(&full, 0, "version", Share::Link).await;
    assert!(matches!(over, Err(StorageError::LinkShareFull)), "{over:?}");
    storage
        .check_share(&roomy, 400, "version", Share::Link)
        .await
        .expect("100 + 400 fits half of 1,000");
    let over = storage.check_share(&roomy, 1, "version", Share::Link).await;
    assert!(matches!(over, Err(StorageError::LinkShareFull)), "{over:?}");
    assert_eq!(
        storage.may_keep(&roomy, 1, Share::Link, "patch"),
        Err(Share::Link)
    );
}
