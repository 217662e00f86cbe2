//! Version history rows (see `crate::history`): insert and drop fenced by the epoch.

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::rows::{found, unavailable};
use crate::history::{VersionAge, VersionData, VersionInfo, VersionRow};
use crate::ids::FileId;
use crate::store::columns::{
    version_age_from, version_from, version_info_from, VERSION_AGE_COLUMNS, VERSION_COLUMNS,
    VERSION_INFO_COLUMNS,
};
use crate::store::{StoreError, StoreResult};

/// Checks the writer's epoch inside an open transaction.
fn fence(tx: &Connection, file: &FileId, epoch: u64) -> StoreResult<()> {
    let current: Option<i64> = tx
        .query_row(
            "SELECT epoch FROM files WHERE id = ?1",
            [file.as_str()],
            |r| r.get(0),
        )
        .optional()
        .map_err(unavailable)?;
    match current {
        None => Err(StoreError::NotFound),
        Some(e) if e as u64 != epoch => Err(StoreError::Fenced),
        Some(_) => Ok(()),
    }
}

fn blobs(data: &VersionData) -> (Option<&[u8]>, Option<&[u8]>) {
    match data {
        VersionData::Base(b) => (Some(b), None),
        VersionData::Delta(d) => (None, Some(d)),
    }
}

pub(super) fn insert(
    c: &mut Connection,
    file: &FileId,
    epoch: u64,
    info: &VersionInfo,
    data: &VersionData,
) -> StoreResult<u64> {
    let tx = c
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(unavailable)?;
    fence(&tx, file, epoch)?;
    let id: i64 = tx
        .query_row(
            "INSERT INTO version_ids (file_id, next_id) VALUES (?1, 2)
             ON CONFLICT (file_id) DO UPDATE SET next_id = next_id + 1
             RETURNING next_id - 1",
            [file.as_str()],
            |r| r.get(0),
        )
        .map_err(unavailable)?;
    let (base, delta) = blobs(data);
    tx.execute(
        "INSERT INTO versions (file_id, id, version, created_at, kind, title, description,
                               editors, restored_from, doc_bytes, base, delta)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            file.as_str(),
            id,
            info.version as i64,
            info.created_at,
            info.kind.as_str(),
            info.title,
            info.description,
            serde_json::to_string(&info.editors).expect("names serialize"),
            info.restored_from.map(|v| v as i64),
            info.doc_bytes.map(|v| v.min(i64::MAX as u64) as i64),
            base,
            delta
        ],
    )
    .map_err(unavailable)?;
    // `version.created` in the version's own commit.
    let event = crate::webhook::event::version_created(file, id as u64, info);
    super::webhooks::record(&tx, &[event])?;
    tx.commit().map_err(unavailable)?;
    Ok(id as u64)
}

pub(super) fn list(
    c: &Connection,
    file: &FileId,
    before: Option<u64>,
    limit: u64,
) -> StoreResult<Vec<VersionInfo>> {
    let mut stmt = c
        .prepare_cached(&format!(
            "SELECT {VERSION_INFO_COLUMNS} FROM versions
             WHERE file_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
        ))
        .map_err(unavailable)?;
    let before = before.map_or(i64::MAX, |b| b.min(i64::MAX as u64) as i64);
    let limit = limit.min(i64::MAX as u64) as i64;
    let rows = stmt
        .query_map(params![file.as_str(), before, limit], |r| {
            version_info_from(r, None)
        })
        .map_err(unavailable)?;
    rows.collect::<Result<_, _>>().map_err(unavailable)
}

/// [`crate::store::Store::version_ages`].
pub(super) fn ages(c: &Connection, file: &FileId) -> StoreResult<Vec<VersionAge>> {
    let mut stmt = c
        .prepare_cached(&format!(
            "SELECT {VERSION_AGE_COLUMNS} FROM versions WHERE file_id = ?1 ORDER BY id DESC"
        ))
        .map_err(unavailable)?;
    let rows = stmt
        .query_map([file.as_str()], |r| version_age_from(r))
        .map_err(unavailable)?;
    rows.collect::<Result<_, _>>().map_err(unavailable)
}

pub(super) fn chain(c: &mut Connection, file: &FileId, id: u64) -> StoreResult<Vec<VersionRow>> {
    let tx = c.transaction().map_err(unavailable)?;
    found(
        &tx,
        "SELECT 1 FROM versions WHERE file_id = ?1 AND id = ?2",
        params![file.as_str(), id as i64],
        |_| Ok(()),
    )?;
    let mut stmt = tx
        .prepare_cached(&format!(
            "SELECT {VERSION_COLUMNS} FROM versions
             WHERE file_id = ?1 AND id <= ?2 AND id >= coalesce((
                 SELECT max(id) FROM versions
                 WHERE file_id = ?1 AND id <= ?2 AND base IS NOT NULL), 0)
             ORDER BY id"
        ))
        .map_err(unavailable)?;
    let rows = stmt
        .query_map(params![file.as_str(), id as i64], |r| version_from(r))
        .map_err(unavailable)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(unavailable)?;
    Ok(rows)
}

pub(super) fn after(c: &Connection, file: &FileId, id: u64) -> StoreResult<Option<VersionRow>> {
    c.query_row(
        &format!(
            "SELECT {VERSION_COLUMNS} FROM versions WHERE file_id = ?1 AND id > ?2
             ORDER BY id LIMIT 1"
        ),
        params![file.as_str(), id as i64],
        |r| version_from(r),
    )
    .optional()
    .map_err(unavailable)
}

pub(super) fn name(
    c: &mut Connection,
    file: &FileId,
    id: u64,
    title: Option<String>,
    description: Option<Option<String>>,
) -> StoreResult<VersionInfo> {
    let tx = c.transaction().map_err(unavailable)?;
    let (set_description, description) = match description {
        Some(d) => (1, d),
        None => (0, None),
    };
    let n = tx
        .execute(
            "UPDATE versions SET kind = 'named', title = coalesce(?3, title),
                 description = CASE WHEN ?4 = 1 THEN ?5 ELSE description END
             WHERE file_id = ?1 AND id = ?2",
            params![
                file.as_str(),
                id as i64,
                title,
                set_description,
                description
            ],
        )
        .map_err(unavailable)?;
    if n == 0 {
        return Err(StoreError::NotFound);
    }
    let info = found(
        &tx,
        &format!("SELECT {VERSION_INFO_COLUMNS} FROM versions WHERE file_id = ?1 AND id = ?2"),
        params![file.as_str(), id as i64],
        |r| version_info_from(r, None),
    )?;
    tx.commit().map_err(unavailable)?;
    Ok(info)
}

pub(super) fn drop(
    c: &mut Connection,
    file: &FileId,
    epoch: u64,
    id: u64,
    next: Option<(u64, VersionData)>,
) -> StoreResult<()> {
    let tx = c
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(unavailable)?;
    fence(&tx, file, epoch)?;
    let n = tx
        .execute(
            "DELETE FROM versions WHERE file_id = ?1 AND id = ?2",
            params![file.as_str(), id as i64],
        )
        .map_err(unavailable)?;
    if n == 0 {
        return Err(StoreError::NotFound);
    }
    if let Some((next, data)) = next {
        let (base, delta) = blobs(&data);
        tx.execute(
            "UPDATE versions SET base = ?3, delta = ?4 WHERE file_id = ?1 AND id = ?2",
            params![file.as_str(), next as i64, base, delta],
        )
        .map_err(unavailable)?;
    }
    tx.commit().map_err(unavailable)
}
