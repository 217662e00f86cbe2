//! What a client keeps across its connections, and its model of the document.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::history::Seen;

/// What a client keeps across its connections: the op ids it used, its unconfirmed patches, and
/// (in tracking mode) its model of the document.
#[derive(Default)]
pub(super) struct State {
    pub(super) op_id: u64,
    pub(super) acked_count: u64,
    /// Tracking mode: sent, not yet acked, by op id: the ops as sent (resent on reconnect).
    pub(super) pending: BTreeMap<u64, String>,
    /// Tracking mode: every acked op id.
    /// Our patches acked, with when.
    pub(super) acked: Vec<(u64, std::time::Instant)>,
    /// Tracking mode: the document as this client knows it, and its version.
    pub(super) doc: Map<String, Value>,
    pub(super) version: u64,
    /// Tracking mode: every version given to this client with its patch, for the history
    /// check (`crate::history`).
    pub(super) seen: Seen,
}

impl State {
    /// An ack for one of our patches: confirmed; its ops enter the model at `v` unless the model
    /// already holds that version (a resent patch the welcome's document already had).
    pub(super) fn ack(&mut self, id: u64, v: Option<u64>) {
        if let Some(ops) = self.pending.remove(&id) {
            self.acked.push((id, std::time::Instant::now()));
            let ops = serde_json::from_str::<Value>(&ops).unwrap_or(Value::Null);
            if let Some(v) = v {
                self.seen.note(v, &ops);
            }
            if let Some(v) = v.filter(|v| *v > self.version) {
                apply_ops(&mut self.doc, &ops);
                self.version = v;
            }
        }
    }

    /// Someone else's patch at `v`, applied in version order.
    pub(super) fn patch(&mut self, v: Option<u64>, ops: Option<&Value>) {
        if let (Some(v), Some(ops)) = (v, ops) {
            self.seen.note(v, ops);
            if v > self.version {
                apply_ops(&mut self.doc, ops);
                self.version = v;
            }
        }
    }

    /// A welcome: the whole document, or what happened since our version.
    pub(super) fn welcome(&mut self, w: &Value) {
        if let Some(doc) = w.get("doc") {
            self.doc = doc.as_object().cloned().unwrap_or_default();
            self.version = w["version"].as_u64().unwrap_or(0);
        } else if let Some(resume) = w.get("resume").and_then(Value::as_array) {
            for entry in resume {
                match entry["type"].as_str() {
                    Some("ack") => self.ack(entry["id"].as_u64().unwrap_or(0), entry["v"].as_u64()),
                    Some("patch") => self.patch(entry["v"].as_u64(), entry.get("ops")),
                    _ => {}
                }
            }
            self.version = self.version.max(w["version"].as_u64().unwrap_or(0));
        }
    }
}

/// Applies a patch's ops to a document (the protocol's put, set and delete).
pub fn apply_ops(doc: &mut Map<String, Value>, ops: &Value) {
    for op in ops.as_array().map(Vec::as_slice).unwrap_or_default() {
        let Some(id) = op["id"].as_str() else {
            continue;
        };
        match op["op"].as_str() {
            Some("put") => {
                doc.insert(id.to_string(), op["props"].clone());
            }
            Some("set") => {
                if let (Some(Value::Object(node)), Some(props)) =
                    (doc.get_mut(id), op["props"].as_object())
                {
                    for (k, v) in props {
                        if v.is_null() {
                            node.remove(k);
                        } else {
                            node.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            Some("delete") => {
                doc.remove(id);
            }
            _ => {}
        }
    }
}
