//! Files: their records, their settings, and the cap on how many an owner has.

use super::support::{account, assert_err, record};
use crate::ids::{AccountId, FileId};
use crate::store::{
    FileRecord, FileUpdate, Holder, LinkAccess, Store, StoreError, CLIENT_ROW_BYTES,
};

/// The ids of an owner's files, newest first.
async fn ids_of(store: &dyn Store, owner: &AccountId) -> Vec<FileId> {
    let files = store.files_of(owner).await.expect("files of");
    files.into_iter().map(|f| f.id).collect()
}

/// Changes a file's name, link access or keys (`None` leaves each alone).
async fn update(
    store: &dyn Store,
    id: &FileId,
    name: Option<&str>,
    link: Option<LinkAccess>,
    keys: Option<(&str, &str)>,
) -> FileRecord {
    let update = FileUpdate {
        name: name.map(Into::into),
        link,
        keys: keys.map(|(view, edit)| (view.into(), edit.into())),
        ..FileUpdate::default()
    };
    store.update_file(id, update).await.expect("update")
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
    assert_eq!(ids_of(store, &a.id).await.len(), 3);
    // Uncapped creation is not counted against anyone else's cap.
    let b = account(store).await;
    store
        .create_file_capped(&record(&b.id, 1), None, 3)
        .await
        .expect("another owner");
    let first = ids_of(store, &a.id).await[0].clone();
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
    assert_eq!(ids_of(store, &c.id).await.len(), 5);
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

    let listed = ids_of(store, &owner.id).await;
    assert_eq!(listed, vec![newer.id.clone(), older.id.clone()]);
    assert!(ids_of(store, &other.id).await.is_empty());

    let unchanged = update(store, &older.id, None, None, None).await;
    assert_eq!(unchanged.name, older.name);
    assert_eq!(unchanged.updated_at, 1_000);

    let renamed = update(store, &older.id, Some("Renamed"), None, None).await;
    assert_eq!(renamed.name, "Renamed");
    assert_eq!(renamed.key_generation, 0);
    assert!(renamed.updated_at > 1_000, "a change moves updated_at");

    let linked = update(store, &older.id, None, Some(LinkAccess::Edit), None).await;
    assert_eq!(linked.link, LinkAccess::Edit);
    assert_eq!(linked.name, "Renamed");

    let rotated = update(store, &older.id, None, None, Some(("view2", "edit2"))).await;
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
    assert_eq!(ids_of(store, &owner.id).await, vec![newer.id]);
}

/// What an owner's files keep: a document, the patches of its log and its versions all
/// count, by their length, and each writer's client row [`CLIENT_ROW_BYTES`]; another
/// owner's files do not; one file alone is measured as well; deleting a file takes its bytes.
pub async fn stored_bytes_per_owner(store: &dyn Store) {
    use super::support::{append_one, patches, take};
    let a = account(store).await;
    let of_a = Holder::Account(a.id.clone());
    assert_eq!(store.stored_bytes(&of_a).await.expect("measure"), 0);
    let doc = r#"{"n1":{"type":"rect","label":"a shape with a label"}}"#;
    let with_doc = record(&a.id, 1);
    store
        .create_file(&with_doc, Some(doc.into()))
        .await
        .expect("create");
    let bare = record(&a.id, 2);
    store.create_file(&bare, None).await.expect("create");
    assert_eq!(store.stored_bytes(&of_a).await.unwrap(), doc.len() as u64);

    let epoch = take(store, &bare.id).await;
    let log = patches(1, 5, 1);
    let logged: usize = log.iter().map(|p| p.ops.len()).sum();
    append_one(store, &bare.id, epoch, log)
        .await
        .expect("append");
    // One writer: its patches and its one client row.
    let one_writer = (doc.len() + logged) as u64 + CLIENT_ROW_BYTES;
    assert_eq!(store.stored_bytes(&of_a).await.unwrap(), one_writer);
    // A second writer adds its row once, however many patches it sends.
    let second = patches(6, 8, 2);
    let logged_second: usize = second.iter().map(|p| p.ops.len()).sum();
    append_one(store, &bare.id, epoch, second)
        .await
        .expect("append");
    // A server API patch's op id is forgotten within a day: its row does not count.
    let mut server = super::support::patch(9, 3, 1);
    server.client.0[..8].copy_from_slice(&crate::store::SERVER_OP_MARK);
    let logged_server = server.ops.len() as u64;
    append_one(store, &bare.id, epoch, vec![server])
        .await
        .expect("append");
    let with_log = store.stored_bytes(&of_a).await.unwrap();
    assert_eq!(
        with_log,
        one_writer + logged_second as u64 + CLIENT_ROW_BYTES + logged_server
    );

    let info = crate::history::new_info(5, 1_000, crate::history::VersionKind::Auto, vec![]);
    let rules = crate::history::HistoryRules::default();
    crate::history::save(store, &bare.id, epoch, doc, info, &rules)
        .await
        .expect("save a version");
    let with_version = store.stored_bytes(&of_a).await.unwrap();
    // Its data (compressed), its editors' `[]` and its row.
    let row = crate::history::VERSION_ROW_BYTES + 2;
    assert!(
        with_version > with_log + row && with_version <= with_log + row + doc.len() as u64 + 64,
        "a version of {} bytes (compressed) took {} ",
        doc.len(),
        with_version - with_log
    );
    // Its title and description count by their length.
    let versions = store.versions(&bare.id, None, 1).await.unwrap();
    let (title, description) = ("t".repeat(100), "d".repeat(1_000));
    store
        .name_version(
            &bare.id,
            versions[0].id,
            Some(title),
            Some(Some(description)),
        )
        .await
        .expect("name");
    let named = store.stored_bytes(&of_a).await.unwrap();
    assert_eq!(named, with_version + 1_100);
    // One file alone: its own bytes, whoever owns it.
    let just = |f: &FileRecord| Holder::File(f.id.clone());
    assert_eq!(
        store.stored_bytes(&just(&with_doc)).await.unwrap(),
        doc.len() as u64
    );
    assert_eq!(
        store.stored_bytes(&just(&bare)).await.unwrap(),
        named - doc.len() as u64
    );

    // Another owner's file counts for that owner alone.
    let b = account(store).await;
    store
        .create_file(&record(&b.id, 1), Some(doc.into()))
        .await
        .expect("create");
    assert_eq!(store.stored_bytes(&of_a).await.unwrap(), named);
    assert_eq!(
        store
            .stored_bytes(&Holder::Account(b.id.clone()))
            .await
            .unwrap(),
        doc.len() as u64
    );

    store.delete_file(&bare.id).await.expect("delete");
    assert_eq!(store.stored_bytes(&of_a).await.unwrap(), doc.len() as u64);
    assert_eq!(store.stored_bytes(&just(&bare)).await.unwrap(), 0);
}
