//! Deltas, comparisons and the retention policy, without a store.

use super::codec::{delta, merge_deltas, nodes};
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
    assert!(nodes("[1]").is_err());
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
    assert_eq!(thinned(&vs, now, &p), [1, 3, 5]);
    let none = Retention {
        all_ms: 0,
        hourly_ms: 0,
        daily_ms: 0,
    };
    assert_eq!(thinned(&vs, now, &none), [1, 3, 4, 5, 6, 7, 8]);
}
