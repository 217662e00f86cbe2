//! What a patch or a document may be, and why one was refused.

/// Memory a document takes while it is built from its JSON and held, per byte of
/// that JSON: the text, the document (about 1.3x, docs/scaling.md), and room to
/// spare. What loads, snapshots and uploads reserve from the memory budget.
pub const BUILD_BYTES_PER_JSON_BYTE: usize = 3;

/// Memory a loaded document holds at most, per byte of its counted size
/// ([`super::Document::charged_len`]: tiny nodes count as [`super::MIN_NODE_BYTES`]);
/// measured in `tests/doc_memory.rs` and docs/scaling.md. Documents of tiny nodes hold
/// more than [`BUILD_BYTES_PER_JSON_BYTE`] per byte of their JSON.
pub const HELD_BYTES_PER_COUNTED_BYTE: usize = 4;

/// Limits for patches and documents.
///
/// Depth counting rule (`max_depth`): a scalar (null, bool, number, string)
/// has depth 0; an array or object has depth 1 + the depth of its deepest
/// element, so an empty `[]` or `{}` has depth 1, `{"x": 1}` has 1 and
/// `[[1]]` has 2. Only prop values are measured; the document object and a
/// node's props object are not counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocLimits {
    /// Most ops in one patch.
    pub max_ops: usize,
    /// Longest prop name, in UTF-8 bytes.
    pub max_prop_name: usize,
    /// Deepest allowed prop value (see the counting rule above).
    pub max_depth: usize,
    /// Largest compact JSON serialization of a whole document, in bytes,
    /// each node's `"id":{...}` counted as at least [`MIN_NODE_BYTES`] (see
    /// [`Document::charged_len`]), so memory stays within a few times the limit.
    pub max_doc_bytes: usize,
    /// Largest one node may be, as its stored `"id":{...}` JSON: at most what one message
    /// can carry, so that a node is never more than a client could send, and a document is
    /// built from its JSON one bounded node at a time.
    pub max_node_bytes: usize,
}

impl Default for DocLimits {
    fn default() -> Self {
        DocLimits {
            max_ops: 1000,
            max_prop_name: 64,
            max_depth: 32,
            max_doc_bytes: 64 * 1024 * 1024,
            max_node_bytes: 1024 * 1024,
        }
    }
}

/// Why a patch or document was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatchError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    TooLarge(String),
}

impl PatchError {
    /// The reject code sent to clients.
    pub fn code(&self) -> &'static str {
        match self {
            PatchError::Invalid(_) => "invalid",
            PatchError::TooLarge(_) => "too-large",
        }
    }
}
