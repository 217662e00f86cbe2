//! Version history: what a version is, how it is stored, and what can be done with one.
//!
//! A version is a file's whole document at one of its versions, kept with when it was
//! made, what made it (an automatic checkpoint, a name a person gave, a restore) and who
//! edited since the version before it. The stores keep versions as rows (see
//! [`VersionData`]); everything about documents (deltas, reading a version back, comparing
//! two, thinning with age) is done here, once for every store.
//!
//! ## Storage proportional to change
//!
//! Each row holds either a **base** (the whole document, deflate-compressed) or a **delta**
//! against the row before it: a JSON object `{node id: props, or null when the node is
//! gone}`, also compressed. A delta names each changed node with its whole new props, so
//! deltas compose by plain union (the later one wins): dropping a version in the middle
//! folds its delta into the next row's, and dropping a base turns the next row into one.
//! A base is written every [`HistoryRules::base_every`] rows, and whenever the deltas since
//! the last base weigh more than that base, so reading a version costs one base plus a
//! bounded number of deltas however long the history is.

#[cfg(test)]
mod bench;
mod codec;
mod compare;
mod entries;
mod retention;
#[cfg(test)]
mod tests;
pub mod turns;
mod work;

use serde::Serialize;

pub use codec::{deflate, delta, inflate, materialize, merge_deltas};
pub use compare::{compare, Changed, Comparison};
pub use entries::charged_len;
pub use retention::{thinned, Retention};
pub use turns::HistoryWork;
pub use work::{
    encode_on_lane, new_info, read, rebuild_within, remove, save, store_encoded, stored, thin,
    Encoded, HistoryRules, Stored,
};

/// What made a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VersionKind {
    /// An automatic checkpoint (thinned with age).
    Auto,
    /// A version a person named (kept until deleted).
    Named,
    /// The state a restore made ("Restored from …"; thinned like a checkpoint unless named).
    Restore,
}

impl VersionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VersionKind::Auto => "auto",
            VersionKind::Named => "named",
            VersionKind::Restore => "restore",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(VersionKind::Auto),
            "named" => Some(VersionKind::Named),
            "restore" => Some(VersionKind::Restore),
            _ => None,
        }
    }
}

/// One version, without its document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionInfo {
    /// The version's id in its file: grows by one with each version saved, never reused.
    pub id: u64,
    /// The document version it holds.
    pub version: u64,
    /// When it was saved (Unix ms).
    pub created_at: i64,
    pub kind: VersionKind,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Who edited since the version before it: accounts by name, guests by display name.
    pub editors: Vec<String>,
    /// The version a restore brought back.
    pub restored_from: Option<u64>,
    /// Bytes the version's row stores (its base or its delta).
    pub bytes: u64,
    /// The version's document as the document limits count it (each node at least
    /// 24 bytes), so work on it reserves what it takes; `None` for versions saved before
    /// stores kept it. Not part of the API's answers.
    #[serde(skip)]
    pub doc_bytes: Option<u64>,
}

/// What thinning needs of a version: the kept fields alone, so a file with many named
/// versions is not read whole (titles, descriptions, editors) after every save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionAge {
    pub id: u64,
    pub created_at: i64,
    pub kind: VersionKind,
}

impl From<&VersionInfo> for VersionAge {
    fn from(v: &VersionInfo) -> Self {
        Self {
            id: v.id,
            created_at: v.created_at,
            kind: v.kind,
        }
    }
}

/// What a version row counts in its owner's storage besides what it stores: about what
/// the row, its key and its numbers take on disk. Its title, description and editors count
/// by their length ([`VersionInfo::text_bytes`]).
pub const VERSION_ROW_BYTES: u64 = 128;

impl VersionInfo {
    /// Bytes of text the version's row keeps: its title, description and editors (as the
    /// stores keep them: a JSON array of names).
    pub fn text_bytes(&self) -> u64 {
        let title = self.title.as_ref().map_or(0, String::len);
        let description = self.description.as_ref().map_or(0, String::len);
        // `["a","b"]`: each name quoted, with a comma between, in brackets (escapes aside).
        let editors: usize = self.editors.iter().map(|e| e.len() + 3).sum::<usize>() + 2;
        (title + description + editors) as u64
    }
}

/// What a version row stores: a compressed base or a compressed delta, never both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionData {
    Base(Vec<u8>),
    Delta(Vec<u8>),
}

impl VersionData {
    pub fn len(&self) -> usize {
        match self {
            VersionData::Base(b) | VersionData::Delta(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_base(&self) -> bool {
        matches!(self, VersionData::Base(_))
    }
}

/// A version's row as the stores read it back: its info and what it stores.
pub type VersionRow = (VersionInfo, VersionData);
