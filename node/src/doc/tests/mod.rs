//! Unit tests of the document: ops, limits, loading, and random patches
//! checked against the reference model.

use serde_json::{json, Value};

use super::*;

mod limits;
mod load;
mod ops;
mod ops_text;
mod random;

fn lim() -> DocLimits {
    DocLimits::default()
}

fn ops(v: Value) -> Vec<Op> {
    parse_ops(&v, &lim()).unwrap()
}

/// Applies a patch and checks the length invariant.
fn patch(d: &mut Document, v: Value) -> Result<(), PatchError> {
    let r = d.apply(&ops(v), &lim());
    assert_eq!(d.serialized_len(), d.to_json().len());
    r
}

fn put(id: &str, props: Value) -> Value {
    json!({"op": "put", "id": id, "props": props})
}

fn set(id: &str, props: Value) -> Value {
    json!({"op": "set", "id": id, "props": props})
}

fn code(ops: Value, limits: &DocLimits) -> &'static str {
    parse_ops(&ops, limits).unwrap_err().code()
}
