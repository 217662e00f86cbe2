//! Document model: a JSON object of nodes, each node a JSON object of props.
//!
//! Clients change a document with patches (lists of [`Op`]s) that apply
//! all-or-nothing. The document tracks the byte length of its compact JSON
//! serialization as ops are applied, so the size limit is enforced without
//! re-serializing the document, and a rejected patch is rolled back from an
//! undo log instead of from a full clone. Both keep the cost of a patch
//! proportional to the patch and the nodes it touches, not to the document.
//!
//! In memory each node is kept as its own compact JSON text, in one
//! allocation with its id (see `Entry`): a document costs about its JSON size
//! plus a few dozen bytes a node, instead of a tree of `Value`s many times
//! that. `put` writes a node's text, `set` rewrites it in one pass over the
//! old text, and serializing the document is concatenation.
//!
//! Where things are: `limits` (what a patch or document may be and why it
//! was refused), `op` (a patch's ops, read and checked), `entry` (one node's
//! text), `members` and `write` (reading and rewriting a node's props as
//! text), `load` (building a document from JSON), `apply` (patches, all or
//! nothing) and `model` (the plain reference model the tests and fuzzers hold
//! it to).

use std::collections::BTreeSet;

use serde_json::Value;

mod apply;
mod entry;
mod limits;
mod load;
mod members;
pub mod model;
mod op;
#[cfg(test)]
mod tests;
mod write;

use entry::Entry;
pub use entry::MIN_NODE_BYTES;
pub use limits::{DocLimits, PatchError, BUILD_BYTES_PER_JSON_BYTE, HELD_BYTES_PER_COUNTED_BYTE};
pub use op::{parse_ops, parse_ops_text, Op, OpsError, Props};

/// A document: its nodes, each held as its compact JSON text (see [`Entry`]),
/// in id order, so serialization is concatenation and deterministic: equal
/// documents give byte-identical JSON, which makes snapshots comparable and
/// tests simple. A node costs its JSON text plus a few dozen bytes.
#[derive(Debug, Clone, Default)]
pub struct Document {
    nodes: BTreeSet<Entry>,
    /// Sum of `Entry::json_len` over nodes.
    entries_len: usize,
    /// Sum of `Entry::shortfall` over nodes.
    shortfall: usize,
}

impl Document {
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts or replaces a node; returns the one it replaced.
    fn insert_entry(&mut self, entry: Entry) -> Option<Entry> {
        self.entries_len += entry.json_len();
        self.shortfall += entry.shortfall();
        let prev = self.nodes.replace(entry);
        if let Some(p) = &prev {
            self.entries_len -= p.json_len();
            self.shortfall -= p.shortfall();
        }
        prev
    }

    fn remove_entry(&mut self, id: &str) -> Option<Entry> {
        let entry = self.nodes.take(id)?;
        self.entries_len -= entry.json_len();
        self.shortfall -= entry.shortfall();
        Some(entry)
    }

    /// Compact JSON serialization: the nodes' texts, concatenated.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.serialized_len());
        out.push('{');
        for (i, entry) in self.nodes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let (id, props) = entry.split();
            out.push('"');
            out.push_str(id);
            out.push_str("\":");
            out.push_str(props);
        }
        out.push('}');
        debug_assert_eq!(out.len(), self.serialized_len());
        out
    }

    pub fn to_value(&self) -> Value {
        let nodes = self.nodes.iter();
        Value::Object(
            nodes
                .map(|e| (e.id().to_owned(), Value::Object(e.props())))
                .collect(),
        )
    }

    /// Always equal to `self.to_json().len()`, in O(1).
    pub fn serialized_len(&self) -> usize {
        2 + self.entries_len + self.nodes.len().saturating_sub(1)
    }

    /// The size the document limit is checked against, in O(1): the
    /// serialized length, with each node's `"id":{...}` counted as at least
    /// [`MIN_NODE_BYTES`].
    pub fn charged_len(&self) -> usize {
        self.serialized_len() + self.shortfall
    }

    /// Bytes of stored nodes a patch's `set`s make the document rewrite (each node once):
    /// a `set` writes its node anew, so what applying a patch costs follows the size of the
    /// nodes it names, not its own.
    pub fn rewrite_cost(&self, ops: &[op::Op]) -> usize {
        let mut ids: Vec<&str> = ops
            .iter()
            .filter_map(|op| match op {
                op::Op::Set { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.iter()
            .filter_map(|id| self.nodes.get(*id))
            .map(|e| e.0.len())
            .sum()
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The ops (a JSON array) that turn this document into `target`: a `put` of each node
    /// that is new or differs, a `delete` of each node `target` lacks. One pass over both
    /// documents in id order; the props are copied as their stored text.
    pub fn patch_to(&self, target: &Document) -> String {
        let mut out = String::from("[");
        let mut push = |s: &str| {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(s);
        };
        let (mut mine, mut theirs) = (self.nodes.iter().peekable(), target.nodes.iter().peekable());
        loop {
            let order = match (mine.peek(), theirs.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(a), Some(b)) => a.id().cmp(b.id()),
            };
            match order {
                std::cmp::Ordering::Less => {
                    let a = mine.next().expect("peeked");
                    push(&format!("{{\"op\":\"delete\",\"id\":\"{}\"}}", a.id()));
                }
                std::cmp::Ordering::Greater => {
                    let b = theirs.next().expect("peeked");
                    push(&format!(
                        "{{\"op\":\"put\",\"id\":\"{}\",\"props\":{}}}",
                        b.id(),
                        b.props_json()
                    ));
                }
                std::cmp::Ordering::Equal => {
                    let (a, b) = (mine.next().expect("peeked"), theirs.next().expect("peeked"));
                    if a.props_json() != b.props_json() {
                        push(&format!(
                            "{{\"op\":\"put\",\"id\":\"{}\",\"props\":{}}}",
                            b.id(),
                            b.props_json()
                        ));
                    }
                }
            }
        }
        out.push(']');
        out
    }

    /// A node's props (parsed from its text: a copy, not a view).
    pub fn get(&self, id: &str) -> Option<Props> {
        self.nodes.get(id).map(Entry::props)
    }
}

/// Serializes as the plain `{"id": {props}}` object, each node's stored text
/// passed through as it is (no intermediate `Value`).
impl serde::Serialize for Document {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.nodes.iter().map(|e| {
            let raw: &serde_json::value::RawValue =
                serde_json::from_str(e.props_json()).expect("stored props are valid JSON");
            (e.id(), raw)
        }))
    }
}
