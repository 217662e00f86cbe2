//! Version history in a store: saving (bases and deltas), reading back, listing newest
//! first in pages, naming, dropping, thinning with age on a simulated clock, fencing, and
//! what deleting a file takes with it.

use serde_json::json;

use super::support::{assert_err, new_file, take};
use crate::history::{self, new_info, HistoryRules, Retention, VersionKind};
use crate::ids::FileId;
use crate::store::{Store, StoreError};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// A document of `n` nodes, node `moved` at `x`.
fn doc(n: usize, moved: usize, x: i64) -> String {
    let mut nodes = serde_json::Map::new();
    for i in 0..n {
        let x = if i == moved { x } else { i as i64 };
        let props = json!({"type": "rect", "x": x, "y": i, "label": format!("shape number {i} with some text")});
        nodes.insert(format!("n{i:05}"), props);
    }
    serde_json::to_string(&nodes).unwrap()
}

async fn save_at(
    store: &dyn Store,
    file: &FileId,
    epoch: u64,
    body: &str,
    version: u64,
    at: i64,
    rules: &HistoryRules,
) -> history::VersionInfo {
    let info = new_info(
        version,
        at,
        VersionKind::Auto,
        vec!["Ada".into(), "Guest".into()],
    );
    history::save(store, file, epoch, body, info, rules)
        .await
        .expect("save a version")
}

/// Versions read back exactly; one shape moved costs a delta, not a document; lists page
/// newest first; the chain stays bounded by `base_every`.
pub async fn versions_save_read_and_page(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let rules = HistoryRules {
        base_every: 4,
        ..HistoryRules::default()
    };
    let mut docs = Vec::new();
    for i in 0..10u64 {
        let d = doc(500, i as usize, 10_000 + i as i64);
        let info = save_at(store, &file, epoch, &d, i * 7, 1_000 + i as i64, &rules).await;
        assert_eq!(info.id, i + 1, "ids count up from 1");
        docs.push((info, d));
    }
    let (first, _) = &docs[0];
    let (second, _) = &docs[1];
    assert!(
        second.bytes * 20 < first.bytes,
        "a moved shape costs a delta ({} bytes), not the document ({} bytes)",
        second.bytes,
        first.bytes
    );
    for (info, d) in &docs {
        let (read, body) = history::read(store, &file, info.id, &rules)
            .await
            .expect("read");
        assert_eq!(&read, info);
        assert_eq!(&body, d, "version {} reads back exactly", info.id);
        // Each keeps its document's size, as the document limits count it.
        let measured = history::charged_len(d).expect("a document") as u64;
        assert_eq!(read.doc_bytes, Some(measured), "version {}", info.id);
        let chain = store.version_chain(&file, info.id).await.expect("chain");
        assert!(chain.len() <= 4, "a chain is bounded by base_every");
        assert_eq!(read.editors, vec!["Ada".to_string(), "Guest".to_string()]);
    }
    let page = store.versions(&file, None, 3).await.expect("list");
    assert_eq!(page.iter().map(|v| v.id).collect::<Vec<_>>(), [10, 9, 8]);
    assert_eq!(
        page[0].doc_bytes, docs[9].0.doc_bytes,
        "lists keep the size too"
    );
    let page = store.versions(&file, Some(8), 3).await.expect("list");
    assert_eq!(page.iter().map(|v| v.id).collect::<Vec<_>>(), [7, 6, 5]);
    let page = store.versions(&file, Some(2), 30).await.expect("list");
    assert_eq!(page.iter().map(|v| v.id).collect::<Vec<_>>(), [1]);
    assert_err!(store.version_chain(&file, 11).await, StoreError::NotFound);
    // What thinning reads: every version, newest first, as the list has them.
    let all = store.versions(&file, None, u64::MAX).await.expect("list");
    let ages = store.version_ages(&file).await.expect("ages");
    let want: Vec<history::VersionAge> = all.iter().map(Into::into).collect();
    assert_eq!(ages, want);
    assert_eq!(ages.len(), 10);
}

/// A version saved after a row that does not keep its document's size (written before
/// rows kept it) starts a chain of its own: a base, so that its work, and every later
/// version's, is planned by kept sizes and never by an estimate.
pub async fn versions_after_a_row_without_its_size_start_a_base(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let rules = HistoryRules::default();
    let old = doc(50, 0, 0);
    let mut info = new_info(1, 1_000, VersionKind::Auto, vec!["Ada".into()]);
    info.doc_bytes = None;
    let row = history::VersionData::Base(history::deflate(&old));
    info.bytes = row.len() as u64;
    let legacy = store
        .insert_version(&file, epoch, &info, &row)
        .await
        .expect("a row without its size");
    let unsized_chain = history::stored(store, &file, legacy).await.expect("stored");
    assert_eq!(unsized_chain.largest, None);
    let next = save_at(store, &file, epoch, &doc(50, 1, 7), 2, 2_000, &rules).await;
    let chain = store.version_chain(&file, next.id).await.expect("chain");
    assert_eq!(
        chain.len(),
        1,
        "a base, not a delta on the row without its size"
    );
    let stored = history::stored(store, &file, next.id)
        .await
        .expect("stored");
    assert!(stored.largest.is_some(), "planned by its kept size");
    // And the chain goes on from there as usual.
    let after = save_at(store, &file, epoch, &doc(50, 2, 9), 3, 3_000, &rules).await;
    let chain = store.version_chain(&file, after.id).await.expect("chain");
    assert_eq!(chain.len(), 2, "a delta on the new base");
}

/// A version saved after the document shrank is a delta on the larger base: rebuilding it
/// takes its chain's largest document, not its own size, and that is what it plans for.
pub async fn versions_plan_for_their_chain(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let rules = HistoryRules::default();
    let (large, small) = (doc(400, 0, 0), doc(5, 0, 0));
    save_at(store, &file, epoch, &large, 1, 1_000, &rules).await;
    let shrunk = save_at(store, &file, epoch, &small, 2, 2_000, &rules).await;
    let chain = store.version_chain(&file, shrunk.id).await.expect("chain");
    assert_eq!(
        chain.len(),
        2,
        "the smaller version is a delta on the larger base"
    );
    let (large_size, own) = (
        history::charged_len(&large).expect("a document"),
        history::charged_len(&small).expect("a document"),
    );
    let stored = history::stored(store, &file, shrunk.id)
        .await
        .expect("stored");
    assert_eq!(stored.largest, Some(large_size));
    assert_eq!(stored.info.doc_bytes, Some(own as u64));
    let metrics = crate::metrics::Metrics::new();
    // Within its own size the base does not fit; within its chain's, it rebuilds.
    let again = history::stored(store, &file, shrunk.id)
        .await
        .expect("stored");
    assert!(history::rebuild_within(again, own, &metrics).await.is_err());
    let (_, body, _) = history::rebuild_within(stored, large_size, &metrics)
        .await
        .expect("rebuilt within its chain's size");
    assert_eq!(body, small);
}

/// Naming gives a title and a description and makes the version `named`; dropping one
/// folds it into the next, so every other version still reads back exactly.
pub async fn versions_named_and_dropped(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let rules = HistoryRules::default();
    let mut docs = Vec::new();
    for i in 0..6u64 {
        let d = doc(50, i as usize, 900 + i as i64);
        docs.push((save_at(store, &file, epoch, &d, i, 1_000, &rules).await, d));
    }
    let named = store
        .name_version(
            &file,
            3,
            Some("Before review".into()),
            Some(Some("the blue one".into())),
        )
        .await
        .expect("name");
    assert_eq!(named.kind, VersionKind::Named);
    assert_eq!(named.title.as_deref(), Some("Before review"));
    assert_eq!(named.description.as_deref(), Some("the blue one"));
    let renamed = store
        .name_version(&file, 3, Some("After review".into()), None)
        .await
        .expect("rename");
    assert_eq!(renamed.description.as_deref(), Some("the blue one"));
    assert_err!(
        store.name_version(&file, 99, Some("x".into()), None).await,
        StoreError::NotFound
    );
    // Drop the base (1), a delta (3), and the newest (6).
    for id in [1, 3, 6] {
        history::remove(store, &file, epoch, id, &rules)
            .await
            .expect("drop");
    }
    let left: Vec<u64> = store
        .versions(&file, None, 100)
        .await
        .unwrap()
        .iter()
        .map(|v| v.id)
        .collect();
    assert_eq!(left, [5, 4, 2]);
    for (info, d) in &docs {
        if left.contains(&info.id) {
            let (_, body) = history::read(store, &file, info.id, &rules)
                .await
                .expect("read");
            assert_eq!(&body, d, "version {} still reads back exactly", info.id);
        }
    }
    // Ids are never reused.
    let next = save_at(store, &file, epoch, &docs[0].1, 9, 2_000, &rules).await;
    assert_eq!(next.id, 7);
    assert_err!(
        history::remove(store, &file, epoch, 3, &rules).await,
        StoreError::NotFound
    );
}

/// Retention on a simulated clock: all of the last day, one an hour for a week, one a day
/// for 30 days, nothing older; named versions and the newest always stay.
pub async fn retention_thins_with_age(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let rules = HistoryRules {
        base_every: 8,
        ..HistoryRules::default()
    };
    let now = 100 * DAY;
    // Every 20 minutes for 40 days: 2,880 checkpoints would be many rows; every 6 hours
    // past the first week and every 20 minutes inside it keeps the test quick.
    let mut times = Vec::new();
    let mut t = now - 40 * DAY;
    while t <= now {
        times.push(t);
        t += if now - t > 8 * DAY {
            6 * HOUR
        } else {
            20 * 60_000
        };
    }
    let mut docs = std::collections::HashMap::new();
    let mut named = Vec::new();
    for (i, at) in times.iter().enumerate() {
        let d = doc(20, i % 20, i as i64);
        let info = save_at(store, &file, epoch, &d, i as u64, *at, &rules).await;
        if i % 50 == 7 {
            store
                .name_version(&file, info.id, Some(format!("n{i}")), None)
                .await
                .unwrap();
            named.push(info.id);
        }
        docs.insert(info.id, (info.created_at, d));
    }
    let newest = times.len() as u64;
    let dropped = history::thin(store, &file, epoch, now, &rules)
        .await
        .expect("thin");
    assert!(dropped > 0);
    let left = store.versions(&file, None, u64::MAX).await.unwrap();
    let policy = Retention::default();
    let mut hours = std::collections::HashSet::new();
    let mut days = std::collections::HashSet::new();
    let mut every_day = std::collections::HashSet::new();
    for v in &left {
        let age = now - v.created_at;
        if v.kind == VersionKind::Named || v.id == newest {
            continue;
        }
        assert!(
            age <= policy.daily_ms,
            "nothing automatic older than 30 days: {v:?}"
        );
        if age > policy.hourly_ms {
            assert!(
                days.insert(v.created_at / DAY),
                "one a day past a week: {v:?}"
            );
        } else if age > policy.all_ms {
            assert!(
                hours.insert(v.created_at / HOUR),
                "one an hour past a day: {v:?}"
            );
        }
        every_day.insert(v.created_at / DAY);
    }
    for id in &named {
        assert!(left.iter().any(|v| v.id == *id), "named version {id} kept");
    }
    assert!(left.iter().any(|v| v.id == newest), "the newest is kept");
    let last_day = times.iter().filter(|t| now - **t <= policy.all_ms).count();
    let kept_last_day = left
        .iter()
        .filter(|v| now - v.created_at <= policy.all_ms)
        .count();
    assert_eq!(kept_last_day, last_day, "all of the last day is kept");
    assert!(
        hours.len() >= 6 * 24 - 2,
        "an hour's worth for each hour of the week: {}",
        hours.len()
    );
    assert!(
        days.len() >= 22,
        "one a day for the rest of the month: {}",
        days.len()
    );
    for v in &left {
        let (_, body) = history::read(store, &file, v.id, &rules)
            .await
            .expect("read");
        assert_eq!(
            body, docs[&v.id].1,
            "version {} reads back after thinning",
            v.id
        );
    }
    // Thinning again at the same time drops nothing more.
    assert_eq!(
        history::thin(store, &file, epoch, now, &rules)
            .await
            .unwrap(),
        0
    );
}

/// A writer whose epoch moved on can neither save nor drop a version.
pub async fn versions_are_fenced(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let old = take(store, &file).await;
    let rules = HistoryRules::default();
    save_at(store, &file, old, &doc(3, 0, 1), 1, 1, &rules).await;
    let new = take(store, &file).await;
    let info = new_info(2, 2, VersionKind::Auto, vec![]);
    assert_err!(
        history::save(store, &file, old, &doc(3, 0, 2), info.clone(), &rules).await,
        StoreError::Fenced
    );
    assert_err!(
        history::remove(store, &file, old, 1, &rules).await,
        StoreError::Fenced
    );
    history::save(store, &file, new, &doc(3, 0, 2), info, &rules)
        .await
        .expect("the new writer saves");
    assert_eq!(store.versions(&file, None, 10).await.unwrap().len(), 2);
}

/// A deleted file's history is gone with it.
pub async fn deleted_file_history_is_gone(store: &dyn Store) {
    let (_, file) = new_file(store).await;
    let epoch = take(store, &file).await;
    let rules = HistoryRules::default();
    for i in 0..3 {
        save_at(store, &file, epoch, &doc(5, i, 7), i as u64, 1, &rules).await;
    }
    // The file's setting for viewers, while it lives.
    assert!(!store.file(&file).await.unwrap().viewers_see_history);
    let update = crate::store::FileUpdate {
        viewers_see_history: Some(true),
        ..Default::default()
    };
    assert!(
        store
            .update_file(&file, update)
            .await
            .unwrap()
            .viewers_see_history
    );
    assert!(store.file(&file).await.unwrap().viewers_see_history);
    store.delete_file(&file).await.expect("delete");
    assert!(store.versions(&file, None, 100).await.unwrap().is_empty());
    assert_err!(store.version_chain(&file, 1).await, StoreError::NotFound);
    assert!(store.version_after(&file, 0).await.unwrap().is_none());
    let info = new_info(9, 9, VersionKind::Auto, vec![]);
    assert_err!(
        history::save(store, &file, epoch, &doc(1, 0, 0), info, &rules).await,
        StoreError::NotFound
    );
}
