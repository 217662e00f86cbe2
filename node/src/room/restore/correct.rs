//! Taking a restore's place: the patch the lane made from the room's copy, corrected for the
//! nodes that edits changed while it was made, so it turns the room's document as it is now
//! into the version.

use std::collections::HashSet;

use serde_json::json;

use super::RestorePatch;
use crate::doc::Document;

/// The lane's patch, corrected for the edits since its copy was taken: the ops that turn
/// `current` into the version, and the version as a document. Ops of nodes no edit touched
/// are the lane's; those of touched nodes are made anew (a handful of nodes, usually); with
/// too many touched (`None`), the whole patch is made anew in one pass over both documents.
pub fn correct(
    current: &Document,
    patch: RestorePatch,
    touched: Option<HashSet<String>>,
) -> (String, Document) {
    let Some(touched) = touched else {
        return (current.patch_to(&patch.doc), patch.doc);
    };
    if touched.is_empty() {
        return (patch.ops_json, patch.doc);
    }
    let mut out = String::from("[");
    let mut push = |s: &str| {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(s);
    };
    for (id, op) in &patch.ops {
        if !touched.contains(id) {
            push(op.get());
        }
    }
    let mut ids: Vec<&String> = touched.iter().collect();
    ids.sort();
    for id in ids {
        match (current.get(id), patch.doc.get(id)) {
            (now, Some(then)) if now.as_ref() != Some(&then) => {
                push(&json!({"op": "put", "id": id, "props": then}).to_string());
            }
            (Some(_), None) => push(&json!({"op": "delete", "id": id}).to_string()),
            _ => {}
        }
    }
    out.push(']');
    (out, patch.doc)
}
