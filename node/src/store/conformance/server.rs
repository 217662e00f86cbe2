//! The server API's queries: files by id prefix, and forgetting expired server op ids.

use super::support::{account, append_one, new_file, record, take};
use crate::ids::{ClientKey, FileId};
use crate::room::server::{server_client, SERVER_CLIENT_MARK};
use crate::store::{LoggedPatch, Store};

/// Files by prefix: only ids that start with it (compared byte by byte: `a_` is not
/// `A_`, and `_`/`-` sort as bytes do), in id order, after `after`, at most `limit`.
pub async fn files_by_prefix(store: &dyn Store) {
    let owner = account(store).await;
    let tag = crate::ids::random_string(8);
    let ids = [
        format!("{tag}_a"),
        format!("{tag}_b"),
        format!("{tag}_B"),
        format!("{tag}-x"),
        format!("{tag}_a_z"),
        tag.clone(),
        format!("x{tag}_a"),
    ];
    for id in &ids {
        let mut r = record(&owner.id, 1);
        r.id = FileId::parse(id).unwrap();
        store.create_file(&r, None).await.expect("create");
    }
    let list = |prefix: String, after: Option<String>, limit: u64| async move {
        store
            .files_with_prefix(&prefix, after.as_deref(), limit)
            .await
            .expect("list")
            .into_iter()
            .map(|f| f.id.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    let mut want = vec![
        format!("{tag}_B"),
        format!("{tag}_a"),
        format!("{tag}_a_z"),
        format!("{tag}_b"),
    ];
    want.sort();
    assert_eq!(list(format!("{tag}_"), None, 10).await, want);
    assert_eq!(list(format!("{tag}_"), None, 2).await, want[..2]);
    assert_eq!(
        list(format!("{tag}_"), Some(want[1].clone()), 10).await,
        want[2..]
    );
    assert_eq!(list(format!("{tag}_a"), None, 10).await.len(), 2);
    assert_eq!(list(tag.clone(), None, 10).await.len(), 6);
    assert!(list(format!("{tag}_c"), None, 10).await.is_empty());
}

fn logged(version: u64, client: ClientKey, op_id: u64) -> LoggedPatch {
    LoggedPatch {
        version,
        client,
        op_id,
        by: "svc-k".into(),
        ops: "[]".into(),
        t: None,
    }
}

/// Expired server op ids are forgotten; fresh ones and every client's are kept.
pub async fn server_ops_expire(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let (old, fresh) = (server_client("k", "old"), server_client("k", "fresh"));
    let person = ClientKey([7; 16]);
    let patches = vec![
        logged(1, old, 1_000),
        logged(2, fresh, 5_000),
        logged(3, person, 1),
    ];
    append_one(store, &file, epoch, patches)
        .await
        .expect("append");
    assert_eq!(old.0[..8], SERVER_CLIENT_MARK);
    let n = store.prune_server_ops(2_000).await.expect("prune");
    assert!(n >= 1, "{n}");
    assert_eq!(store.client_op(&file, old).await.unwrap(), None);
    assert_eq!(
        store.client_op(&file, fresh).await.unwrap(),
        Some((5_000, 2))
    );
    assert_eq!(store.client_op(&file, person).await.unwrap(), Some((1, 3)));
}
