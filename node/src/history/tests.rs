//! Deltas, comparisons and the retention policy, without a store.

use super::codec::{delta, merge_deltas};
use super::entries::in_order;
use super::*;

#[test]
fn a_delta_and_a_merge_carry_a_document_forward() {
    let a = r#"{"a":{"x":1},"b":{"x":2},"c":{"x":3}}"#;
    let b = r#"{"a":{"x":1},"b":{"x":5},"d":{"x":4}}"#;
    let c = r#"{"b":{"x":6},"d":{"x":4},"e":{"x":7}}"#;
    let (ab, bc) = (delta(a, b).unwrap(), delta(b, c).unwrap());
    let chain = |ds: &[&str]| {
        let mut rows = vec![VersionData::Base(deflate(a))];
        rows.extend(ds.iter().map(|d| VersionData::Delta(deflate(d))));
        materialize(&rows, 1 << 20).unwrap()
    };
    assert_eq!(chain(&[&ab]), b);
    assert_eq!(chain(&[&ab, &bc]), c);
    assert_eq!(chain(&[&merge_deltas(&ab, &bc).unwrap()]), c);
    assert!(in_order("[1]").is_err());
    assert!(
        inflate(&deflate(&"x".repeat(100)), 10).is_err(),
        "inflation is bounded"
    );
}

#[test]
fn a_comparison_names_nodes_and_the_props_that_changed() {
    let from = r#"{"a":{"x":1,"y":2},"b":{"x":2},"c":{"x":3}}"#;
    let to = r#"{"a":{"x":1,"y":3,"z":0},"b":{"x":2},"d":{"x":4}}"#;
    let c = compare(from, to).unwrap();
    assert_eq!(c.added, ["d"]);
    assert_eq!(c.removed, ["c"]);
    assert_eq!(
        c.changed,
        [Changed {
            id: "a".into(),
            props: vec!["y".into(), "z".into()]
        }]
    );
}

fn info(id: u64, created_at: i64, kind: VersionKind) -> VersionInfo {
    VersionInfo {
        kind,
        ..new_info(id, created_at, kind, vec![])
    }
    .with_id(id)
}

impl VersionInfo {
    fn with_id(mut self, id: u64) -> Self {
        self.id = id;
        self
    }
}

#[test]
fn retention_keeps_the_day_then_hours_then_days() {
    const H: i64 = 3_600_000;
    let now = 1_000 * H;
    let p = Retention::default();
    let vs = vec![
        info(1, now - 40 * 24 * H, VersionKind::Auto), // older than 30 days: dropped
        info(2, now - 40 * 24 * H, VersionKind::Named), // named: kept
        info(3, now - 20 * 24 * H - 2 * H, VersionKind::Auto), // same day as 4: dropped
        info(4, now - 20 * 24 * H - H, VersionKind::Auto), // kept (newest of its day)
        info(5, now - 3 * 24 * H - 10, VersionKind::Restore), // same hour as 6: dropped
        info(6, now - 3 * 24 * H - 5, VersionKind::Auto), // kept
        info(7, now - 2 * H, VersionKind::Auto),       // last day: kept
        info(8, now - H, VersionKind::Auto),           // kept
        info(9, now - 50 * 24 * H, VersionKind::Auto), // newest by id: always kept
    ];
    let vs: Vec<VersionAge> = vs.iter().map(Into::into).collect();
    assert_eq!(thinned(&vs, now, &p), [1, 3, 5]);
    let none = Retention {
        all_ms: 0,
        hourly_ms: 0,
        daily_ms: 0,
    };
    assert_eq!(thinned(&vs, now, &none), [1, 3, 4, 5, 6, 7, 8]);
}

/// The history walks documents in id order instead of building maps of their nodes: it must
/// give what the maps gave, whatever the values hold, for ids that need escaping and for
/// texts not in id order.
#[test]
fn walking_in_id_order_gives_what_maps_of_nodes_gave() {
    use std::collections::BTreeMap;

    use rand::{Rng, SeedableRng};
    use serde_json::value::RawValue;

    type Nodes = BTreeMap<String, Box<RawValue>>;
    let map = |doc: &str| serde_json::from_str::<Nodes>(doc).unwrap();
    let by_map = |from: &str, to: &str| {
        let (a, b) = (map(from), map(to));
        let mut d: BTreeMap<String, Option<Box<RawValue>>> = BTreeMap::new();
        for (id, p) in &b {
            if a.get(id).is_none_or(|q| q.get() != p.get()) {
                d.insert(id.clone(), Some(p.clone()));
            }
        }
        for id in a.keys().filter(|id| !b.contains_key(*id)) {
            d.insert(id.clone(), None);
        }
        serde_json::to_string(&d).unwrap()
    };
    // As written in JSON: one with quotes in it, one with a comma and a brace, one escaped.
    let ids = ["a", "b", r#"c\"q\""#, "d,}", r"\u00e9t\u00e9", "z"];
    let values = [
        r#"{"x":1}"#,
        r#"{"t":"a } or ] or \" inside"}"#,
        r#"{"n":[1,{"deep":[2,3]},"]"]}"#,
        r#"{}"#,
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let doc = |rng: &mut rand::rngs::StdRng| {
        let mut m = BTreeMap::new();
        for id in ids {
            if rng.random_bool(0.7) {
                let id: String = serde_json::from_str(&format!("\"{id}\"")).unwrap();
                m.insert(id, values[rng.random_range(0..values.len())].to_string());
            }
        }
        let text: Vec<String> = m
            .iter()
            .map(|(k, v)| format!("{}:{v}", serde_json::to_string(k).unwrap()))
            .collect();
        format!("{{{}}}", text.join(","))
    };
    for _ in 0..300 {
        let (a, b, c) = (doc(&mut rng), doc(&mut rng), doc(&mut rng));
        let (ab, bc) = (delta(&a, &b).unwrap(), delta(&b, &c).unwrap());
        assert_eq!(ab, by_map(&a, &b), "{a} -> {b}");
        let rows = |ds: &[&str]| {
            let mut rows = vec![VersionData::Base(deflate(&a))];
            rows.extend(ds.iter().map(|d| VersionData::Delta(deflate(d))));
            materialize(&rows, 1 << 20).unwrap()
        };
        assert_eq!(rows(&[&ab, &bc]), serde_json::to_string(&map(&c)).unwrap());
        assert_eq!(rows(&[&merge_deltas(&ab, &bc).unwrap()]), rows(&[&ab, &bc]));
    }
    // Out of order (not what the node writes, but readable), with spaces.
    let shuffled = r#"{ "b" : {"x":2}, "a" : {"x":1} }"#;
    assert_eq!(
        delta(shuffled, r#"{"a":{"x":1}}"#).unwrap(),
        r#"{"b":null}"#
    );
    // A node named twice, or what is not an object, is an error, never a panic.
    for bad in [
        r#"{"a":{},"a":{}}"#,
        r#"{"b":{},"a":{},"b":{}}"#,
        "[]",
        "{",
        r#"{"a"}"#,
        "7",
    ] {
        assert!(delta(bad, "{}").is_err(), "{bad}");
        assert!(compare(bad, "{}").is_err(), "{bad}");
    }
}

/// Saving a version as a delta costs about the texts, whatever the nodes' size: a
/// document of 200,000 empty nodes took 25 times its size as two maps of nodes.
#[test]
fn a_delta_of_many_small_nodes_costs_about_its_texts() {
    let mut doc = String::from("{");
    for i in 0..200_000 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!("\"{i:06}\":{{}}"));
    }
    doc.push('}');
    let next = doc.replacen("\"000007\":{}", "\"000007\":{\"x\":1}", 1);
    let (d, peak) = crate::allocator::counting::peak_of(|| delta(&doc, &next).unwrap());
    assert_eq!(d, r#"{"000007":{"x":1}}"#);
    assert!(
        peak < doc.len() as u64 / 2,
        "a delta of a {} byte document took {peak} bytes",
        doc.len()
    );
}
