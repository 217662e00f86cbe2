//! What put, set and delete do, alone and together.

use serde_json::json;

use super::*;

#[test]
fn put_creates_and_replaces_exactly() {
    let mut d = Document::new();
    patch(&mut d, json!([put("a", json!({"x": 1, "y": 2}))])).unwrap();
    assert_eq!(d.to_value(), json!({"a": {"x": 1, "y": 2}}));
    patch(&mut d, json!([put("a", json!({"z": null}))])).unwrap();
    assert_eq!(d.to_value(), json!({"a": {"z": null}}));
    assert_eq!(d.node_count(), 1);
}

#[test]
fn set_updates_listed_props_and_null_removes() {
    let mut d = Document::new();
    patch(
        &mut d,
        json!([put("a", json!({"x": 1, "old": 1, "k": "v"}))]),
    )
    .unwrap();
    let s = set(
        "a",
        json!({"x": 10, "fill": "#f00", "old": null, "gone": null}),
    );
    patch(&mut d, json!([s])).unwrap();
    assert_eq!(
        d.to_value(),
        json!({"a": {"x": 10, "fill": "#f00", "k": "v"}})
    );
}

#[test]
fn set_and_delete_on_missing_node_do_nothing() {
    let mut d = Document::new();
    let p = json!([put("a", json!({"x": 1})), {"op": "delete", "id": "a"}]);
    patch(&mut d, p).unwrap();
    patch(&mut d, json!([set("a", json!({"x": 2}))])).unwrap();
    patch(&mut d, json!([{"op": "delete", "id": "a"}])).unwrap();
    assert_eq!(d.to_json(), "{}");
    assert!(d.get("a").is_none());
}

#[test]
fn last_writer_wins_within_and_across_patches() {
    let mut d = Document::new();
    let p = json!([
        put("a", json!({"x": 1})),
        set("a", json!({"x": 2})),
        set("a", json!({"x": 3, "y": 1})),
        put("b", json!({"x": 1})),
        set("b", json!({"x": 2})),
        put("b", json!({"w": 0})),
    ]);
    patch(&mut d, p).unwrap();
    assert_eq!(d.to_value(), json!({"a": {"x": 3, "y": 1}, "b": {"w": 0}}));
    patch(&mut d, json!([set("a", json!({"x": 4}))])).unwrap();
    patch(&mut d, json!([set("a", json!({"x": 5, "y": null}))])).unwrap();
    assert_eq!(d.get("a").as_ref(), json!({"x": 5}).as_object());
    // Several ops on one node in one patch, around a delete and a put.
    let p = json!([
        set("a", json!({"x": 6, "k": 1})),
        set("b", json!({"w": null, "v": [1]})),
        set("a", json!({"x": null, "z": "z"})),
        {"op": "delete", "id": "a"},
        set("a", json!({"x": 7})),
        put("a", json!({"p": 1, "q": 2})),
        set("a", json!({"q": null, "r": 3})),
        set("a", json!({"r": null, "s": null, "t": {}})),
        set("c", json!({"x": 1})),
    ]);
    patch(&mut d, p).unwrap();
    assert_eq!(d.to_json(), r#"{"a":{"p":1,"t":{}},"b":{"v":[1]}}"#,);
}
