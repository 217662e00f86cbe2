//! The patch applier: `doc::parse_ops` then `Document::apply`, against a
//! plain reference model.
//!
//! Input: one byte of settings, then JSON text. The JSON is either an ops
//! array, or `[doc, ops, ops, ...]` when the settings byte says so (a starting
//! document, then several patches in turn).
//!
//! Properties: no panic; a rejected patch leaves the document byte for byte
//! as it was (all or nothing); an accepted one gives exactly what the
//! reference model computes; `serialized_len()` always equals the length of
//! `to_json()`, and `charged_len()` the size rule computed from the model
//! (each node's `"id":{...}` counted as at least `MIN_NODE_BYTES`); a patch
//! that would grow the document past the limit, so counted, is refused with
//! `too-large`, and one that does not grow it is never refused for size.

#![no_main]

use atrium_node::doc::model::{self, Model};
use atrium_node::doc::{parse_ops, DocLimits, Document, PatchError};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn check_len(doc: &Document, model: &Model) {
    assert_eq!(
        doc.serialized_len(),
        doc.to_json().len(),
        "serialized_len drifted from the real length"
    );
    assert_eq!(
        doc.charged_len(),
        model::charged(model),
        "charged_len drifted from the size rule"
    );
}

fn patch(doc: &mut Document, model: &mut Model, ops_value: &Value, limits: &DocLimits) {
    let ops = match parse_ops(ops_value, limits) {
        Ok(ops) => ops,
        Err(_) => return,
    };
    let before = doc.to_json();
    let before_len = doc.charged_len();
    let mut next = model.clone();
    model::apply(&mut next, &ops);
    let next_len = model::charged(&next);
    match doc.apply(&ops, limits) {
        Ok(()) => {
            *model = next;
            assert_eq!(
                doc.to_json(),
                model::json(model),
                "document differs from model"
            );
            assert!(
                doc.charged_len() <= limits.max_doc_bytes || doc.charged_len() <= before_len,
                "accepted a patch that grew the document past its limit"
            );
        }
        Err(e) => {
            assert_eq!(
                doc.to_json(),
                before,
                "a rejected patch changed the document"
            );
            match e {
                PatchError::TooLarge(_) => assert!(
                    next_len > limits.max_doc_bytes && next_len > before_len,
                    "too-large for a patch ending at {next_len} bytes from {before_len}"
                ),
                PatchError::Invalid(m) => {
                    panic!("parse_ops accepted ops that apply calls invalid: {m}")
                }
            }
        }
    }
    check_len(doc, model);
}

fuzz_target!(|data: &[u8]| {
    let Some((&settings, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let limits = DocLimits {
        max_ops: 1 + usize::from(settings & 0x0f) * 8,
        max_prop_name: 64,
        max_depth: if settings & 0x10 != 0 { 3 } else { 32 },
        // Small documents, so the size limit is met by short inputs.
        max_doc_bytes: 16 << ((settings >> 5) & 0x03) * 2,
        // No node limit: the reference model does not know it.
        max_node_bytes: usize::MAX,
    };
    let mut doc = Document::new();
    let mut model = Model::new();
    if settings & 0x80 != 0 {
        // [doc, ops, ops, ...]
        let Value::Array(items) = value else { return };
        let mut items = items.into_iter();
        if let Some(start) = items.next() {
            let big = DocLimits {
                max_doc_bytes: usize::MAX,
                ..limits.clone()
            };
            if let Ok(d) = Document::from_value(start.clone(), &big) {
                doc = d;
                if let Value::Object(map) = start {
                    for (id, node) in map {
                        if let Value::Object(props) = node {
                            model.insert(id, props);
                        }
                    }
                }
                assert_eq!(doc.to_json(), model::json(&model), "from_value differs");
                check_len(&doc, &model);
            }
        }
        for ops in items.take(16) {
            patch(&mut doc, &mut model, &ops, &limits);
        }
    } else {
        patch(&mut doc, &mut model, &value, &limits);
    }
});
