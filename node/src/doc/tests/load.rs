//! Building documents from JSON, and the timed hot path of small sets.

use serde_json::json;
use serde_json::{Map, Value};

use super::*;

/// The hot path, timed (not asserted): 100,000 one-op patches that set
/// `x` and `y` of a ten-prop shape, as a drag does, on a document of
/// 10,000 shapes. `cargo test --release -p atrium-node --lib -- --ignored
/// bench_small_sets --nocapture`.
#[test]
#[ignore]
fn bench_small_sets() {
    let mut d = Document::new();
    let shape = |i: usize| {
        json!({"fill": "#3a7bd5", "h": 120.5, "name": format!("rect {i}"), "page": "p1",
               "rotation": 0, "stroke": "#1e1e1e", "type": "rect", "w": 240.25,
               "x": i as f64 * 1.5, "y": -220.75})
    };
    for chunk in (0..10_000).collect::<Vec<_>>().chunks(1000) {
        let p: Vec<Value> = chunk
            .iter()
            .map(|&i| put(&format!("shape-{i:05}"), shape(i)))
            .collect();
        d.apply(&ops(Value::Array(p)), &lim()).unwrap();
    }
    let patches: Vec<Vec<Op>> = (0..100_000)
        .map(|k| {
            let id = format!("shape-{:05}", (k * 7919) % 10_000);
            ops(json!([set(
                &id,
                json!({"x": k as f64 + 0.25, "y": -(k as f64)})
            )]))
        })
        .collect();
    let start = std::time::Instant::now();
    for p in &patches {
        d.apply(p, &lim()).unwrap();
    }
    let took = start.elapsed();
    eprintln!(
        "BENCH 100000 set patches: {:.1} ms, {:.0} ns a patch",
        took.as_secs_f64() * 1e3,
        took.as_nanos() as f64 / 100_000.0
    );
    assert_eq!(d.serialized_len(), d.to_json().len());
}

#[test]
fn from_json_round_trip_and_validation() {
    let mut d = Document::new();
    let p = json!([
        put("n1", json!({"t": "héllo \"x\"", "v": [1.5, {"k": null}]})),
        put("n2", json!({}))
    ]);
    patch(&mut d, p).unwrap();
    let back = Document::from_json(d.to_json().as_bytes(), &lim()).unwrap();
    assert_eq!(back.to_json(), d.to_json());
    assert_eq!(back.serialized_len(), d.serialized_len());
    assert_eq!((back.node_count(), back.get("n2")), (2, Some(Map::new())));
    // Whitespace in the input does not count toward the compact length.
    let spaced = Document::from_json(b" { \"a\" : { \"x\" : [ 1 , 2 ] } } ", &lim()).unwrap();
    assert_eq!(spaced.serialized_len(), spaced.to_json().len());
    assert_eq!(Document::new().serialized_len(), 2);

    let bad: [&[u8]; 5] = [
        b"{",
        b"[]",
        br#"{"a b":{}}"#,
        br#"{"a":1}"#,
        br#"{"a":{"v":[[[]]]}}"#,
    ];
    let two = DocLimits {
        max_depth: 2,
        ..lim()
    };
    for b in bad {
        assert_eq!(Document::from_json(b, &two).unwrap_err().code(), "invalid");
    }
    let small = DocLimits {
        max_doc_bytes: 8,
        ..lim()
    };
    let err = Document::from_json(br#"{"a":{"x":1}}"#, &small).unwrap_err();
    assert_eq!(err.code(), "too-large");
}

#[test]
fn a_document_naming_a_node_twice_is_refused() {
    let text = r#"{"a":{"x":1},"b":{},"a":{"x":2}}"#;
    let err = Document::from_json(text.as_bytes(), &DocLimits::default()).unwrap_err();
    assert!(err.to_string().contains("appears twice"), "{err}");
}

/// A document the JSON parser refuses is answered in a fixed sentence, never the parser's
/// own text with its positions (the eleventh review found it echoed).
#[test]
fn a_document_the_parser_refuses_is_named_without_the_parsers_text() {
    let deep = format!(
        r#"{{"n": {{"a": {}1{}}}}}"#,
        "[".repeat(500),
        "]".repeat(500)
    );
    for bad in [
        deep.as_str(),
        r#"{"n": {"a": 1} "m": {}}"#,
        r#"{"n": {"a": tru}}"#,
    ] {
        let Err(PatchError::Invalid(message)) =
            Document::from_json(bad.as_bytes(), &DocLimits::default())
        else {
            panic!("{bad:.40} was taken");
        };
        for leak in ["line ", "column", "recursion", "expected"] {
            assert!(!message.contains(leak), "{message}");
        }
    }
}
