//! The plain reference model a [`Document`](super::Document) is held to by the
//! unit tests and the fuzzers: nodes as ordinary maps of props, changed the
//! obvious way, and the size rule computed from scratch.

use std::collections::BTreeMap;

use super::{Op, Props, MIN_NODE_BYTES};

/// Nodes as plain maps of props, in id order.
pub type Model = BTreeMap<String, Props>;

/// Applies ops one by one: put replaces, set changes the listed props of an
/// existing node (null removes), delete removes.
pub fn apply(model: &mut Model, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Put { id, props } => {
                model.insert(id.clone(), props.clone());
            }
            Op::Set { id, props } => {
                if let Some(node) = model.get_mut(id) {
                    for (k, v) in props {
                        match v.is_null() {
                            true => node.remove(k),
                            false => node.insert(k.clone(), v.clone()),
                        };
                    }
                }
            }
            Op::Delete { id } => {
                model.remove(id);
            }
        }
    }
}

/// The model's compact JSON, what `Document::to_json` must give.
pub fn json(model: &Model) -> String {
    serde_json::to_string(model).expect("a model serializes")
}

/// The size the document limit counts (`Document::charged_len`): the JSON's
/// length, each node's `"id":{...}` counted as at least [`MIN_NODE_BYTES`].
pub fn charged(model: &Model) -> usize {
    let small = model.iter().map(|(id, props)| {
        let entry = id.len() + 3 + serde_json::to_string(props).expect("props serialize").len();
        MIN_NODE_BYTES.saturating_sub(entry)
    });
    json(model).len() + small.sum::<usize>()
}
