//! The figures of docs/scaling.md ("Version history"), measured on the embedded store:
//! `cargo test -p atrium-node --release --lib history::bench -- --ignored --nocapture`.
//!
//! A day of a 1 MB document (5,000 shapes) edited by 10 people at 20 patches a second in
//! bursts (one minute on, one off), each person working on a cluster of 50 shapes that moves
//! every hour, with a checkpoint every 10 minutes: what the history stores. Then the time to
//! list 1,000 versions, and to read and to restore a version of the document (p50, p99).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde_json::json;

use super::*;
use crate::doc::{parse_ops, DocLimits, Document};
use crate::room::restore::{correct, PrepareJob};
use crate::store::sqlite::SqliteStore;
use crate::store::{FileRecord, LinkAccess, Store};

const SHAPES: usize = 5_000;
const PEOPLE: usize = 10;
const MINUTE_MS: i64 = 60_000;

fn shape(i: usize, x: i64, y: i64) -> serde_json::Value {
    json!({"type": "rect", "page": "p1", "x": x, "y": y, "w": 120, "h": 80,
           "fill": format!("#{:06x}", i * 2654435761 % 0xffffff), "stroke": "#333333",
           "label": format!("Shape {i}: a box of the flow"), "z": i,
           "note": "a line of text the shape carries, as designs do"})
}

fn pct(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: prints the figures of docs/scaling.md"]
async fn a_day_of_history_for_a_one_megabyte_document() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let owner = store
        .create_account("bench@example.test", "Bench", "x")
        .await
        .unwrap();
    let record = FileRecord {
        id: crate::ids::FileId::generate(),
        owner: owner.id.clone(),
        name: "bench".into(),
        link: LinkAccess::None,
        view_key: crate::ids::random_string(32),
        edit_key: crate::ids::random_string(32),
        key_generation: 0,
        version: 0,
        updated_at: 0,
        viewers_see_history: false,
    };
    store.create_file(&record, None).await.unwrap();
    let file = record.id.clone();
    let epoch = store.take_file(&file, 0).await.unwrap().epoch;
    let rules = HistoryRules::default();
    let limits = DocLimits {
        max_ops: usize::MAX,
        ..DocLimits::default()
    };

    let mut doc = Document::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut nodes = serde_json::Map::new();
    for i in 0..SHAPES {
        nodes.insert(
            format!("s{i:05}"),
            shape(i, (i % 100) as i64 * 150, (i / 100) as i64 * 100),
        );
    }
    let ops: Vec<serde_json::Value> = nodes
        .iter()
        .map(|(id, p)| json!({"op": "put", "id": id, "props": p}))
        .collect();
    doc.apply(&parse_ops(&json!(ops), &limits).unwrap(), &limits)
        .unwrap();
    println!(
        "document: {} bytes, {} shapes",
        doc.serialized_len(),
        SHAPES
    );

    // One day: 144 windows of 10 minutes; in each, 5 minutes of bursts at 20 patches/s.
    let (mut version, mut patches, mut next_shape) = (0u64, 0u64, SHAPES);
    let start = 1_000 * 24 * 60 * MINUTE_MS;
    for window in 0..144i64 {
        let hour = window / 6;
        for _ in 0..(5 * 60 * 20) {
            let who = rng.random_range(0..PEOPLE);
            let cluster = (who * 500 + hour as usize * 37 * 50) % (SHAPES - 50);
            let op = if rng.random_range(0..100) == 0 {
                next_shape += 1;
                json!({"op": "put", "id": format!("s{next_shape:05}"), "props": shape(next_shape, 0, 0)})
            } else {
                let id = format!("s{:05}", cluster + rng.random_range(0..50));
                json!({"op": "set", "id": id, "props": {"x": rng.random_range(0..15_000), "y": rng.random_range(0..5_000)}})
            };
            let ops = parse_ops(&json!([op]), &limits).unwrap();
            doc.apply(&ops, &limits).unwrap();
            version += 1;
            patches += 1;
        }
        let editors = (0..PEOPLE).map(|p| format!("Person {p}")).collect();
        let info = work::new_info(
            version,
            start + window * 10 * MINUTE_MS,
            VersionKind::Auto,
            editors,
        );
        save(&store, &file, epoch, &doc.to_json(), info, &rules)
            .await
            .unwrap();
    }
    let all = store.versions(&file, None, u64::MAX).await.unwrap();
    let bytes: u64 = all.iter().map(|v| v.bytes).sum();
    let bases = all
        .iter()
        .filter(|v| v.bytes as usize > doc.serialized_len() / 20)
        .count();
    println!(
        "one day: {patches} patches, {} versions ({bases} of them bases), {bytes} bytes stored \
         ({:.1} MB), {:.0} bytes a version on average",
        all.len(),
        bytes as f64 / 1e6,
        bytes as f64 / all.len() as f64
    );

    // Reading and restoring a version of the 1 MB document. A restore's heavy part (the
    // version read as a document, the patch from the room's copy) runs on the bulk lane;
    // the room's task only copies its document when asked, and takes the version's place
    // when the patch is back, correcting the ops of nodes edited meanwhile (20 here, or too
    // many to note: the whole patch made anew).
    let (mut reads, mut lane_work) = (Vec::new(), Vec::new());
    let (mut copies, mut takes, mut takes_touched, mut takes_walk) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..60 {
        let id = all[(i * 7) % all.len()].id;
        let t = Instant::now();
        let (_, json) = read(&store, &file, id, &rules).await.unwrap();
        reads.push(t.elapsed());
        let t = Instant::now();
        let base = doc.clone();
        copies.push(t.elapsed());
        let job = || PrepareJob {
            seq: 1,
            base: base.clone(),
            target: json.clone(),
            limits: DocLimits::default(),
        };
        let t = Instant::now();
        let patch = job().run().outcome.unwrap();
        lane_work.push(t.elapsed());
        let t = Instant::now();
        drop(correct(&doc, patch, Some(HashSet::new())));
        takes.push(t.elapsed());
        let touched: HashSet<String> = (0..20)
            .map(|k| format!("s{:05}", (i * 50 + k * 13) % SHAPES))
            .collect();
        let patch = job().run().outcome.unwrap();
        let t = Instant::now();
        drop(correct(&doc, patch, Some(touched)));
        takes_touched.push(t.elapsed());
        let patch = job().run().outcome.unwrap();
        let t = Instant::now();
        drop(correct(&doc, patch, None));
        takes_walk.push(t.elapsed());
    }
    let p = |v: &Vec<Duration>| {
        format!(
            "p50 {:?}, p99 {:?}",
            pct(v.clone(), 0.5),
            pct(v.clone(), 0.99)
        )
    };
    println!("read a version: {}", p(&reads));
    println!(
        "restore on the lane (parse the version, patch, split): {}",
        p(&lane_work)
    );
    println!(
        "restore on the room's task: copy {}; take its place {}; with 20 nodes edited meanwhile {}; \
         with too many (whole patch anew) {}",
        p(&copies),
        p(&takes),
        p(&takes_touched),
        p(&takes_walk)
    );

    // Listing 1,000 versions (small ones: the list never reads what they store).
    let small = crate::ids::FileId::generate();
    let r = FileRecord {
        id: small.clone(),
        ..record
    };
    store.create_file(&r, None).await.unwrap();
    let epoch = store.take_file(&small, 0).await.unwrap().epoch;
    for i in 0..1_000u64 {
        let info = work::new_info(i, i as i64, VersionKind::Auto, vec!["A".into()]);
        let data = VersionData::Delta(deflate("{}"));
        store
            .insert_version(&small, epoch, &info, &data)
            .await
            .unwrap();
    }
    let mut lists = Vec::new();
    for _ in 0..30 {
        let t = Instant::now();
        let got = store.versions(&small, None, 1_000).await.unwrap();
        lists.push(t.elapsed());
        assert_eq!(got.len(), 1_000);
    }
    println!(
        "list 1,000 versions: p50 {:?}, p99 {:?}",
        pct(lists.clone(), 0.5),
        pct(lists, 0.99)
    );
}
