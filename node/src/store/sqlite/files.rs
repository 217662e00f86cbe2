//! Files: creation under the owner's cap, listing, and changes to their settings.

use rusqlite::{params, Connection, TransactionBehavior};

use super::now_ms;
use super::parts::Stored;
use super::rows::{read_file, unavailable, unique_or_unavailable};
use crate::history::VERSION_ROW_BYTES;
use crate::ids::{AccountId, FileId};
use crate::store::columns::{file_from, FILE_COLUMNS};
use crate::store::{
    FileRecord, FileUpdate, Holder, StoreError, StoreResult, CLIENT_ROW_BYTES, SERVER_OP_MARK_HEX,
};

/// [`crate::store::Store::create_file_capped`], with its document ready (its parts, if
/// any, written; on an error they are the caller's to forget).
pub(super) fn insert(
    c: &mut Connection,
    r: &FileRecord,
    doc: Option<&Stored<'_>>,
    max_owned: u64,
) -> StoreResult<()> {
    // One writer connection and an immediate transaction: the count and the
    // insert cannot interleave with another creation.
    let tx = c
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(unavailable)?;
    // A taken id is the insert's own uniqueness error below.
    owner_has_room(&tx, r, max_owned)?;
    tx.execute(
        "INSERT INTO files (id, owner, name, link, view_key, edit_key, key_generation,
                            epoch, version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, (SELECT epoch + 1 FROM epoch_floor), 0, ?7, ?7)",
        params![
            r.id.as_str(),
            r.owner.as_str(),
            r.name,
            r.link.as_str(),
            r.view_key,
            r.edit_key,
            r.updated_at
        ],
    )
    .map_err(|e| unique_or_unavailable(e, StoreError::Conflict))?;
    if let Some(doc) = doc {
        let (doc, parts) = doc.columns();
        tx.execute(
            "INSERT INTO snapshots (file_id, version, doc, parts) VALUES (?1, 0, ?2, ?3)",
            params![r.id.as_str(), doc, parts],
        )
        .map_err(unavailable)?;
    }
    tx.commit().map_err(unavailable)
}

/// Whether `r` may be made: `Conflict` when its id is taken, `Full` when its owner has
/// `max_owned` files. Asked before a large document is written, so a refused creation
/// writes nothing; the creation's transaction asks again.
pub(super) fn room_for(c: &Connection, r: &FileRecord, max_owned: u64) -> StoreResult<()> {
    let taken = c
        .prepare_cached("SELECT 1 FROM files WHERE id = ?1")
        .and_then(|mut s| s.exists([r.id.as_str()]))
        .map_err(unavailable)?;
    if taken {
        return Err(StoreError::Conflict);
    }
    owner_has_room(c, r, max_owned)
}

/// `Full` when `r`'s owner already has `max_owned` files.
fn owner_has_room(c: &Connection, r: &FileRecord, max_owned: u64) -> StoreResult<()> {
    if max_owned == u64::MAX {
        return Ok(());
    }
    let owned: i64 = c
        .query_row(
            "SELECT count(*) FROM files WHERE owner = ?1",
            [r.owner.as_str()],
            |row| row.get(0),
        )
        .map_err(unavailable)?;
    if owned as u64 >= max_owned {
        return Err(StoreError::Full);
    }
    Ok(())
}

/// [`crate::store::Store::files_of`]: newest first.
pub(super) fn of_owner(c: &Connection, owner: &AccountId) -> StoreResult<Vec<FileRecord>> {
    let mut stmt = c
        .prepare_cached(&format!(
            "SELECT {FILE_COLUMNS} FROM files WHERE owner = ?1 ORDER BY updated_at DESC, id"
        ))
        .map_err(unavailable)?;
    let rows = stmt
        .query_map([owner.as_str()], |r| file_from(r, 0))
        .map_err(unavailable)?;
    rows.collect::<Result<_, _>>().map_err(unavailable)
}

/// [`crate::store::Store::stored_bytes`]: `octet_length` reads a value's length from
/// its record header, never the value itself, so the sum costs a walk of the rows; each
/// writer's row counts [`CLIENT_ROW_BYTES`] (the server API's, forgotten within a day, do
/// not), each version's [`VERSION_ROW_BYTES`] besides its text.
pub(super) fn stored_bytes(c: &Connection, holder: &Holder) -> StoreResult<u64> {
    let (by, value) = holder.column_and_value();
    let mut stmt = c
        .prepare_cached(&format!(
            "SELECT \
               COALESCE((SELECT SUM(octet_length(s.doc)) FROM snapshots s \
                         JOIN files f ON f.id = s.file_id \
                         WHERE f.{by} = ?1 AND s.parts IS NULL), 0) \
             + COALESCE((SELECT SUM(octet_length(p.bytes)) FROM document_parts p \
                         JOIN snapshots s ON s.parts = p.document \
                         JOIN files f ON f.id = s.file_id WHERE f.{by} = ?1), 0) \
             + COALESCE((SELECT SUM(octet_length(o.ops)) FROM ops o \
                         JOIN files f ON f.id = o.file_id WHERE f.{by} = ?1), 0) \
             + COALESCE((SELECT SUM(COALESCE(octet_length(v.base), 0) \
                                  + COALESCE(octet_length(v.delta), 0) \
                                  + COALESCE(octet_length(v.title), 0) \
                                  + COALESCE(octet_length(v.description), 0) \
                                  + octet_length(v.editors) + ?3) FROM versions v \
                         JOIN files f ON f.id = v.file_id WHERE f.{by} = ?1), 0) \
             + ?2 * (SELECT COUNT(*) FROM client_ops c \
                     JOIN files f ON f.id = c.file_id WHERE f.{by} = ?1 \
                     AND substr(c.client, 1, 8) <> X'{SERVER_OP_MARK_HEX}')"
        ))
        .map_err(unavailable)?;
    let total: i64 = stmt
        .query_row(
            params![value, CLIENT_ROW_BYTES as i64, VERSION_ROW_BYTES as i64],
            |r| r.get(0),
        )
        .map_err(unavailable)?;
    Ok(total.max(0) as u64)
}

/// [`crate::store::Store::update_file`]: each field given, then the record as it is now.
pub(super) fn change(
    c: &mut Connection,
    id: &FileId,
    update: &FileUpdate,
) -> StoreResult<FileRecord> {
    let tx = c.transaction().map_err(unavailable)?;
    read_file(&tx, id)?;
    let now = now_ms();
    if let Some(name) = &update.name {
        tx.execute(
            "UPDATE files SET name = ?1, updated_at = ?2 WHERE id = ?3",
            params![name, now, id.as_str()],
        )
        .map_err(unavailable)?;
    }
    if let Some(link) = update.link {
        tx.execute(
            "UPDATE files SET link = ?1, updated_at = ?2 WHERE id = ?3",
            params![link.as_str(), now, id.as_str()],
        )
        .map_err(unavailable)?;
    }
    if let Some(see) = update.viewers_see_history {
        tx.execute(
            "UPDATE files SET viewers_see_history = ?1, updated_at = ?2 WHERE id = ?3",
            params![see as i64, now, id.as_str()],
        )
        .map_err(unavailable)?;
    }
    if let Some((view, edit)) = &update.keys {
        tx.execute(
            "UPDATE files SET view_key = ?1, edit_key = ?2,
             key_generation = key_generation + 1, updated_at = ?3 WHERE id = ?4",
            params![view, edit, now, id.as_str()],
        )
        .map_err(unavailable)?;
    }
    let record = read_file(&tx, id)?;
    tx.commit().map_err(unavailable)?;
    Ok(record)
}
