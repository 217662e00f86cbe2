//! Large documents, written in parts, each part a commit of its own.
//!
//! SQLite has one writer, and a commit holds it until its pages are synced. A document of
//! a megabyte written in one transaction (a file's snapshot, a new file's upload) held
//! every room's journal commit behind it for 6-14 ms (docs/reliability.md). Written in
//! parts of [`PART_BYTES`], each its own short commit, a journal commit that waits goes
//! between two parts (the writer's urgent turn). The snapshot's row then names the parts,
//! in one small transaction of the write that needed them, so a reader sees the old
//! document or the new, never a mix.

use std::borrow::Cow;

use rusqlite::{params, Connection, OptionalExtension};

use super::rows::unavailable;
use super::writer::Writer;
use crate::ids::FileId;
use crate::store::{StoreError, StoreResult};

/// The most of a document one commit writes; a larger one is written in parts.
pub(super) const PART_BYTES: usize = 64 * 1024;

/// How a `snapshots` row's `doc` begins when its document is in parts, followed by the
/// document's size: not JSON, so a node from before parts refuses to open such a file
/// rather than taking it as empty, and the size lets a reader tell a whole document from
/// one missing its last parts.
const IN_PARTS: &str = "(in document_parts) ";

/// A document ready for its `snapshots` row: the text itself, or the id and the size in
/// bytes of its parts.
pub(super) enum Stored<'a> {
    Inline(&'a str),
    Parts { id: i64, bytes: usize },
}

impl Stored<'_> {
    /// The row's `doc` and `parts` columns.
    pub(super) fn columns(&self) -> (Cow<'_, str>, Option<i64>) {
        match self {
            Stored::Inline(doc) => (Cow::Borrowed(*doc), None),
            Stored::Parts { id, bytes } => (Cow::Owned(format!("{IN_PARTS}{bytes}")), Some(*id)),
        }
    }

    pub(super) fn parts(&self) -> Option<i64> {
        match self {
            Stored::Inline(_) => None,
            Stored::Parts { id, .. } => Some(*id),
        }
    }
}

/// Whether `doc` is written in parts.
pub(super) fn in_parts(doc: &str) -> bool {
    doc.len() > PART_BYTES
}

/// Makes `doc` ready for a row: a small one as it is, a large one written in parts first,
/// each part a commit that waits its turn behind the journal's.
pub(super) fn prepare<'a>(writer: &Writer, doc: &'a str) -> StoreResult<Stored<'a>> {
    if !in_parts(doc) {
        return Ok(Stored::Inline(doc));
    }
    let mut id = None;
    for (n, part) in doc.as_bytes().chunks(PART_BYTES).enumerate() {
        let conn = writer.ordinary();
        let written = match id {
            // The first part takes the next free id; later parts follow it.
            None => conn
                .query_row(
                    "INSERT INTO document_parts (document, part, bytes)
                     SELECT COALESCE(MAX(document), 0) + 1, 0, ?1 FROM document_parts
                     RETURNING document",
                    [part],
                    |r| r.get(0),
                )
                .map(|d| id = Some(d)),
            Some(d) => conn
                .execute(
                    "INSERT INTO document_parts (document, part, bytes) VALUES (?1, ?2, ?3)",
                    params![d, n as i64, part],
                )
                .map(drop),
        };
        drop(conn);
        if let Err(e) = written {
            if let Some(d) = id {
                forget(writer, d);
            }
            return Err(unavailable(e));
        }
    }
    let bytes = doc.len();
    id.map(|id| Stored::Parts { id, bytes })
        .ok_or_else(|| StoreError::Unavailable("a document in no parts".into()))
}

/// Removes parts no row came to name (the write that made them failed). A failure only
/// leaves them until the next start's [`sweep`].
pub(super) fn forget(writer: &Writer, id: i64) {
    if let Err(e) = remove(&writer.ordinary(), id) {
        tracing::warn!(parts = id, error = %e, "unused document parts are left until restart");
    }
}

/// Removes a document's parts inside the caller's transaction.
pub(super) fn remove(conn: &Connection, id: i64) -> StoreResult<()> {
    conn.execute("DELETE FROM document_parts WHERE document = ?1", [id])
        .map(drop)
        .map_err(unavailable)
}

/// A file's snapshot, its document read whole from its parts when it has them (call it
/// inside the transaction that reads the log after it: the row and its parts are then of
/// one moment).
pub(super) fn read_snapshot(conn: &Connection, id: &FileId) -> StoreResult<Option<(u64, String)>> {
    let row = conn
        .query_row(
            "SELECT version, doc, parts FROM snapshots WHERE file_id = ?1",
            [id.as_str()],
            |r| {
                let (version, doc, parts) = (r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?);
                Ok((version as u64, doc, parts))
            },
        )
        .optional()
        .map_err(unavailable)?;
    row.map(|(version, doc, parts)| Ok((version, read(conn, doc, parts)?)))
        .transpose()
}

/// The document named by a row's `doc` and `parts`, read whole.
pub(super) fn read(conn: &Connection, doc: String, parts: Option<i64>) -> StoreResult<String> {
    let Some(id) = parts else {
        return Ok(doc);
    };
    // A document missing any part is an error, never a shorter document.
    let damaged = || StoreError::Unavailable(format!("document parts {id} are damaged"));
    let size: usize = doc
        .strip_prefix(IN_PARTS)
        .and_then(|n| n.parse().ok())
        .ok_or_else(damaged)?;
    let mut stmt = conn
        .prepare_cached("SELECT bytes FROM document_parts WHERE document = ?1 ORDER BY part")
        .map_err(unavailable)?;
    let mut rows = stmt.query([id]).map_err(unavailable)?;
    let mut bytes = Vec::with_capacity(size);
    while let Some(row) = rows.next().map_err(unavailable)? {
        let part = row.get_ref(0).map_err(unavailable)?;
        bytes.extend_from_slice(part.as_blob().map_err(|e| unavailable(e.into()))?);
    }
    if bytes.len() != size {
        return Err(damaged());
    }
    String::from_utf8(bytes).map_err(|_| damaged())
}

/// At start, before any write: removes parts that no row names (a write stopped between
/// its parts and its row).
pub(super) fn sweep(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM document_parts WHERE document NOT IN
           (SELECT parts FROM snapshots WHERE parts IS NOT NULL)",
        [],
    )
}

/// The parts a file's row names, if any (for a write that replaces or deletes it).
pub(super) fn named(conn: &Connection, file: &str) -> StoreResult<Option<i64>> {
    conn.query_row(
        "SELECT parts FROM snapshots WHERE file_id = ?1",
        [file],
        |r| r.get::<_, Option<i64>>(0),
    )
    .optional()
    .map(Option::flatten)
    .map_err(unavailable)
}

#[cfg(test)]
mod tests;
