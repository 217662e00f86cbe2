//! Patches and documents past the limits are refused and change nothing.

use serde_json::json;

use super::*;

#[test]
fn invalid_shapes_are_rejected() {
    let long = "a".repeat(65);
    let cases = [
        json!("put"),
        json!({"op": "move", "id": "a"}),
        json!({"id": "a", "props": {}}),
        json!({"op": "put", "props": {}}),
        json!({"op": "put", "id": "a"}),
        json!({"op": "put", "id": 5, "props": {}}),
        json!({"op": "delete", "id": "a", "props": {}}),
        json!({"op": "set", "id": "a", "props": {}, "extra": 1}),
        put("a", json!([1])),
        set("a", json!(null)),
        put("a b", json!({})),
        put(&long, json!({})),
        put("../x", json!({})),
        put("nœud", json!({})),
        put("", json!({})),
    ];
    for c in cases {
        assert_eq!(code(json!([c]), &lim()), "invalid", "{c}");
    }
    assert_eq!(code(json!({"op": "put"}), &lim()), "invalid");
    parse_ops(&json!([put(&"a".repeat(64), json!({}))]), &lim()).unwrap();
    // apply re-validates ops that did not come from parse_ops
    let bad = [Op::Delete { id: "../x".into() }];
    let err = Document::new().apply(&bad, &lim()).unwrap_err();
    assert_eq!(err.code(), "invalid");
}

#[test]
fn op_count_limit() {
    let many = |n: usize| Value::Array(vec![json!({"op": "delete", "id": "a"}); n]);
    assert_eq!(ops(many(1000)).len(), 1000);
    assert_eq!(code(many(1001), &lim()), "too-large");
    let raw = vec![Op::Delete { id: "a".into() }; 1001];
    let err = Document::new().apply(&raw, &lim()).unwrap_err();
    assert_eq!(
        err,
        PatchError::TooLarge("patch has 1001 ops, limit is 1000".into())
    );
}

#[test]
fn prop_name_limit() {
    let props = |n: usize| Value::Object([("p".repeat(n), json!(1))].into_iter().collect());
    parse_ops(&json!([put("a", props(64)), set("a", props(64))]), &lim()).unwrap();
    assert_eq!(code(json!([put("a", props(65))]), &lim()), "invalid");
    assert_eq!(code(json!([set("a", props(65))]), &lim()), "invalid");
}

#[test]
fn depth_limit() {
    let nested = |depth: usize, obj: bool| {
        (0..depth).fold(
            json!(1),
            |v, _| if obj { json!({"k": v}) } else { json!([v]) },
        )
    };
    for obj in [false, true] {
        parse_ops(&json!([put("a", json!({"v": nested(32, obj)}))]), &lim()).unwrap();
        let deep = json!([set("a", json!({"v": nested(33, obj)}))]);
        assert_eq!(code(deep, &lim()), "invalid");
    }
    // The counting rule: scalar 0, container 1 + deepest child.
    let one = DocLimits {
        max_depth: 1,
        ..lim()
    };
    parse_ops(
        &json!([put("a", json!({"s": 1, "o": {"x": 1}, "e": []}))]),
        &one,
    )
    .unwrap();
    assert_eq!(code(json!([put("a", json!({"v": [[]]}))]), &one), "invalid");
}

#[test]
fn size_limit_rejects_and_leaves_document_unchanged() {
    let small = DocLimits {
        max_doc_bytes: 120,
        ..lim()
    };
    let mut d = Document::new();
    patch(
        &mut d,
        json!([put("a", json!({"x": 1})), put("b", json!({"y": "hi"}))]),
    )
    .unwrap();
    let before = d.to_json();
    let big = "z".repeat(100);
    // Grows through every kind of op, then passes the limit at the end.
    let p = json!([
        put("c", json!({"n": 1})),
        set("a", json!({"x": 2, "w": [1, 2, 3]})),
        {"op": "delete", "id": "b"},
        put("b", json!({"again": true})),
        set("a", json!({"x": null})),
        set("c", json!({"big": big})),
    ]);
    let err = d.apply(&ops(p), &small).unwrap_err();
    assert_eq!(err.code(), "too-large");
    assert_eq!(d.to_json(), before);
    assert_eq!(d.serialized_len(), before.len());
    // Passing the limit midway is fine if the patch ends under it.
    let p = json!([put("c", json!({"big": big})), {"op": "delete", "id": "c"}]);
    d.apply(&ops(p), &small).unwrap();
    assert_eq!(d.to_json(), before);
    // A shrinking patch is accepted even over a lowered limit.
    let tiny = DocLimits {
        max_doc_bytes: 10,
        ..lim()
    };
    d.apply(&ops(json!([set("b", json!({"y": null}))])), &tiny)
        .unwrap();
    assert_eq!(d.to_json(), r#"{"a":{"x":1},"b":{}}"#);
}

/// A patch that must free some bytes (a new writer's first patch when the owner's storage is
/// full: its client row is kept too) lands only when it makes the document that much
/// smaller, and one that does not changes nothing, however far under the limit it stays.
#[test]
fn a_patch_that_must_free_bytes_lands_only_when_it_does() {
    let mut d = Document::new();
    let text = "t".repeat(300);
    patch(
        &mut d,
        json!([put("a", json!({"text": text})), put("b", json!({"x": 1}))]),
    )
    .unwrap();
    let before = d.to_json();
    for p in [json!([]), json!([set("b", json!({"x": 2}))])] {
        let err = d.apply_freeing(&ops(p), &lim(), 128).unwrap_err();
        assert_eq!(err.code(), "too-large");
        assert_eq!(d.to_json(), before);
    }
    // Deleting a third of the text is not enough; deleting the node is.
    let third = "t".repeat(200);
    let err = d
        .apply_freeing(&ops(json!([set("a", json!({"text": third}))])), &lim(), 128)
        .unwrap_err();
    assert_eq!(err.code(), "too-large");
    assert_eq!(d.to_json(), before);
    let start = d.charged_len();
    d.apply_freeing(&ops(json!([{"op": "delete", "id": "a"}])), &lim(), 128)
        .unwrap();
    assert!(d.charged_len() + 128 <= start);
}

/// A node is at most `max_node_bytes` of stored JSON: a patch that would make one larger
/// is refused whole, one already larger may shrink, and a document whose JSON holds a
/// larger node is refused before that node is parsed.
#[test]
fn node_limit_holds_for_patches_and_documents() {
    let small = DocLimits {
        max_node_bytes: 64,
        ..lim()
    };
    let mut d = Document::new();
    d.apply(&ops(json!([put("a", json!({"x": 1}))])), &small)
        .unwrap();
    let before = d.to_json();
    let long = "y".repeat(60);
    for p in [
        json!([put("b", json!({"t": long})), put("c", json!({"n": 1}))]),
        json!([set("a", json!({"t": long}))]),
        json!([
            set("a", json!({"t": "y".repeat(30)})),
            set("a", json!({"u": "y".repeat(30)}))
        ]),
    ] {
        let err = d.apply(&ops(p), &small).unwrap_err();
        assert_eq!(err.code(), "too-large");
        assert!(err.to_string().contains("node"), "{err}");
        assert_eq!(d.to_json(), before, "refused whole");
    }
    // Over a lowered limit, a node may still shrink, and grow by a little.
    d.apply(&ops(json!([set("a", json!({"t": long}))])), &lim())
        .unwrap();
    d.apply(&ops(json!([set("a", json!({"x": null}))])), &small)
        .unwrap();
    d.apply(&ops(json!([set("a", json!({"x": 12345}))])), &small)
        .unwrap();
    let err = d
        .apply(
            &ops(json!([set("a", json!({"u": "y".repeat(5000)}))])),
            &small,
        )
        .unwrap_err();
    assert_eq!(err.code(), "too-large");

    let text = format!(r#"{{"a":{{"x":1}},"b":{{"t":"{long}"}}}}"#);
    let err = Document::from_json(text.as_bytes(), &small).unwrap_err();
    assert_eq!(err.code(), "too-large");
    assert!(Document::from_json(text.as_bytes(), &lim()).is_ok());
    // The worst shape for parsed memory: one node of small numbers, refused unparsed.
    let numbers = format!(r#"{{"n":{{"a":[{}0]}}}}"#, "0,".repeat(600_000));
    let err = Document::from_json(numbers.as_bytes(), &lim()).unwrap_err();
    assert_eq!(err.code(), "too-large");
}
