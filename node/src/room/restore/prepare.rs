//! The heavy part of a restore, off the room's task: reading the version's document
//! (checked against the document limits) and the patch from the room's document, as it
//! was when the restore was asked for, to it. For a 1 MB document this is a good part of a
//! second of CPU (docs/scaling.md), so the shell runs it on the bulk lane
//! ([`crate::lane`]) while the room goes on ordering edits; the room then only has to
//! correct the patch for the nodes those edits touched (`restore.rs`).

use serde_json::value::RawValue;

use crate::doc::{DocLimits, Document};

/// A restore to prepare: the room's document at `base_version` and the version's JSON.
pub struct PrepareJob {
    /// Tells the answer apart from that of an earlier restore.
    pub seq: u64,
    pub base: Document,
    pub target: String,
    /// The room's document limits (any number of ops: a restore is one patch).
    pub limits: DocLimits,
}

/// The patch that turns the base into the version, and the version as a document.
pub struct RestorePatch {
    /// The ops, a JSON array.
    pub ops_json: String,
    /// Each op's node id and text, in the order of `ops_json`.
    pub ops: Vec<(String, Box<RawValue>)>,
    /// The restored document (the base with the patch applied).
    pub doc: Document,
}

/// What came of a [`PrepareJob`]: the patch, or why the version cannot be restored.
pub struct Prepared {
    pub seq: u64,
    pub outcome: Result<RestorePatch, String>,
}

#[derive(serde::Deserialize)]
struct OpId {
    id: String,
}

impl PrepareJob {
    /// The document bytes the work handles (for the lane's choice of inline or not).
    pub fn bytes(&self) -> usize {
        self.target.len().max(self.base.serialized_len())
    }

    pub fn run(self) -> Prepared {
        // A version may hold nodes from before the node limit: a restore brings them back.
        let limits = DocLimits {
            max_ops: usize::MAX,
            max_node_bytes: usize::MAX,
            ..self.limits
        };
        let outcome = Document::from_json(self.target.as_bytes(), &limits)
            .map_err(|e| e.to_string())
            .and_then(|doc| {
                let ops_json = self.base.patch_to(&doc);
                let raw: Vec<Box<RawValue>> =
                    serde_json::from_str(&ops_json).map_err(|e| e.to_string())?;
                let ops = raw
                    .into_iter()
                    .map(|op| {
                        let id =
                            serde_json::from_str::<OpId>(op.get()).map_err(|e| e.to_string())?;
                        Ok((id.id, op))
                    })
                    .collect::<Result<_, String>>()?;
                Ok(RestorePatch { ops_json, ops, doc })
            });
        Prepared {
            seq: self.seq,
            outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(json: &str) -> Document {
        Document::from_json(json.as_bytes(), &DocLimits::default()).unwrap()
    }

    #[test]
    fn the_patch_turns_the_base_into_the_version_and_names_each_op_node() {
        let job = PrepareJob {
            seq: 3,
            base: doc(r#"{"a":{"x":1},"b":{"x":2},"c":{"x":3}}"#),
            target: r#"{"a":{"x":1},"b":{"x":9},"d":{"x":4}}"#.into(),
            limits: DocLimits::default(),
        };
        let p = job.run();
        assert_eq!(p.seq, 3);
        let patch = p.outcome.expect("restorable");
        let ids: Vec<&str> = patch.ops.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "d"]);
        assert_eq!(
            patch.doc.to_json(),
            r#"{"a":{"x":1},"b":{"x":9},"d":{"x":4}}"#
        );
        let joined = format!(
            "[{}]",
            patch
                .ops
                .iter()
                .map(|(_, op)| op.get())
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(joined, patch.ops_json);
    }

    #[test]
    fn a_version_over_the_limits_is_refused_with_the_reason() {
        let job = PrepareJob {
            seq: 1,
            base: Document::new(),
            target: r#"{"a":{"x":"a long enough text"}}"#.into(),
            limits: DocLimits {
                max_doc_bytes: 10,
                ..DocLimits::default()
            },
        };
        let err = job.run().outcome.err().expect("too large");
        assert!(!err.is_empty());
        let bad = PrepareJob {
            seq: 2,
            base: Document::new(),
            target: "[1]".into(),
            limits: DocLimits::default(),
        };
        assert!(bad.run().outcome.is_err());
    }
}
