//! The socket's message parser (`protocol::parse`) on arbitrary text.
//!
//! Properties: it never panics, never overflows the stack (deep nesting), and
//! what it accepts respects the contract's limits: a patch has a positive id,
//! at most `max_ops` valid ops, `ops_json` that is JSON again and parses to the
//! same ops, and a `t` that is a finite number; a hello's `client` is an id;
//! a presence's `sel` holds at most 100 ids.

#![no_main]

use atrium_node::doc::{parse_ops, DocLimits, Op};
use atrium_node::protocol::{parse, ClientMessage, MAX_SELECTION};
use libfuzzer_sys::fuzz_target;

fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn finite_number(text: &str) -> bool {
    !text.starts_with('"') && serde_json::from_str::<f64>(text).is_ok_and(f64::is_finite)
}

/// Each op's kind, id and prop names.
fn shape(ops: &[Op]) -> Vec<(String, Vec<String>)> {
    ops.iter()
        .map(|op| match op {
            Op::Put { id, props } => (format!("put {id}"), props.keys().cloned().collect()),
            Op::Set { id, props } => (format!("set {id}"), props.keys().cloned().collect()),
            Op::Delete { id } => (format!("delete {id}"), Vec::new()),
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    // The socket hands the parser text only (invalid UTF-8 closes with 1007).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Small limits too, so the limit paths are reached by short inputs.
    let small = DocLimits {
        max_ops: 3,
        max_prop_name: 4,
        max_depth: 2,
        max_doc_bytes: 256,
        max_node_bytes: 64,
    };
    for limits in [DocLimits::default(), small] {
        match parse(text, &limits) {
            Ok(ClientMessage::Patch(p)) => {
                assert!(p.id > 0, "accepted a patch with id 0");
                assert!(p.ops.len() <= limits.max_ops, "more ops than allowed");
                let again: serde_json::Value =
                    serde_json::from_str(&p.ops_json).expect("ops_json is JSON");
                let ops = parse_ops(&again, &limits).expect("ops_json parses again");
                // Exactly, numbers included: the node relays and logs `ops_json`, and
                // reads it back after a restart (regressions/parse_message-float-*.json
                // caught a parser that was not correctly rounded; the workspace turns on
                // serde_json's `float_roundtrip`).
                assert_eq!(ops, p.ops, "ops_json does not round-trip");
                assert_eq!(shape(&ops), shape(&p.ops));
                if let Some(t) = &p.t {
                    assert!(finite_number(t), "t {t:?} is not a finite number");
                }
            }
            Ok(ClientMessage::Event(data)) => {
                // Relayed to others as it is: it must be one JSON value.
                serde_json::from_str::<serde_json::Value>(&data).expect("event data is JSON");
            }
            Ok(ClientMessage::Hello(h)) => {
                assert!(is_id(&h.client), "hello with a bad client id");
                assert!(h.token.as_deref() != Some(""), "empty token kept");
                assert!(h.key.as_deref() != Some(""), "empty key kept");
                if let Some(name) = &h.name {
                    assert!(name.chars().count() <= 64, "name not cut");
                    assert!(!name.chars().any(char::is_control), "control char kept");
                }
            }
            Ok(ClientMessage::Presence(p)) => {
                if let Some(Some(page)) = &p.page {
                    assert!(is_id(page), "presence page is not an id");
                }
                if let Some(Some(sel)) = &p.sel {
                    assert!(sel.len() <= MAX_SELECTION, "selection over the limit");
                    assert!(sel.iter().all(|s| is_id(s)), "selection of non-ids");
                }
                for c in p.cursor.iter().flatten().flatten() {
                    assert!(c.is_finite(), "cursor not finite");
                }
                for c in p.camera.iter().flatten().flatten() {
                    assert!(c.is_finite(), "camera not finite");
                }
            }
            Ok(ClientMessage::Refresh(token)) => {
                assert!(!token.is_empty(), "empty refresh token kept");
                assert!(
                    token.len() <= atrium_node::protocol::MAX_TOKEN_BYTES,
                    "refresh token over its bound"
                );
            }
            Err(r) => {
                assert!(
                    matches!(r.code, "invalid" | "too-large"),
                    "unexpected reject code {}",
                    r.code
                );
            }
        }
    }
});
