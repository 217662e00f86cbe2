//! Records out of result rows, assembled once for every store: each store says how it
//! reads one column of its rows ([`Columns`]), the records are built here.

use super::{Account, FileRecord, LinkAccess, LoggedPatch};
use crate::history::{VersionAge, VersionData, VersionInfo, VersionKind, VersionRow};
use crate::ids::{AccountId, ClientKey, FileId};

/// The file columns, in the order [`file_from`] reads them.
pub(crate) const FILE_COLUMNS: &str =
    "id, owner, name, link, view_key, edit_key, key_generation, version, updated_at, viewers_see_history";

/// The account columns, in the order [`account_from`] reads them.
pub(crate) const ACCOUNT_COLUMNS: &str = "id, email, name, password_hash";

/// One result row of a store's database, read column by column.
pub(crate) trait Columns {
    type Error;
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    fn maybe_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    fn bytes(&self, i: usize) -> Result<Vec<u8>, Self::Error>;
    fn maybe_int(&self, i: usize) -> Result<Option<i64>, Self::Error>;
    fn maybe_bytes(&self, i: usize) -> Result<Option<Vec<u8>>, Self::Error>;
}

/// A file record from [`FILE_COLUMNS`], starting at column `at`.
pub(crate) fn file_from<R: Columns>(row: &R, at: usize) -> Result<FileRecord, R::Error> {
    Ok(FileRecord {
        id: FileId::parse(&row.text(at)?).unwrap_or_else(FileId::generate),
        owner: AccountId::parse(&row.text(at + 1)?).unwrap_or_else(AccountId::generate),
        name: row.text(at + 2)?,
        link: LinkAccess::parse(&row.text(at + 3)?).unwrap_or(LinkAccess::None),
        view_key: row.text(at + 4)?,
        edit_key: row.text(at + 5)?,
        key_generation: row.int(at + 6)? as u64,
        version: row.int(at + 7)? as u64,
        updated_at: row.int(at + 8)?,
        viewers_see_history: row.int(at + 9)? != 0,
    })
}

/// An account from [`ACCOUNT_COLUMNS`].
pub(crate) fn account_from<R: Columns>(row: &R) -> Result<Account, R::Error> {
    Ok(Account {
        id: AccountId::parse(&row.text(0)?).unwrap_or_else(AccountId::generate),
        email: row.text(1)?,
        name: row.text(2)?,
        password_hash: row.text(3)?,
    })
}

/// A logged patch from `version, client, op_id, by, ops, t` (a client key that is not
/// 16 bytes reads as zeros).
pub(crate) fn patch_from<R: Columns>(row: &R) -> Result<LoggedPatch, R::Error> {
    let client = row.bytes(1)?;
    let mut key = [0u8; 16];
    if client.len() == 16 {
        key.copy_from_slice(&client);
    }
    Ok(LoggedPatch {
        version: row.int(0)? as u64,
        client: ClientKey(key),
        op_id: row.int(2)? as u64,
        by: row.text(3)?,
        ops: row.text(4)?,
        t: row.maybe_text(5)?,
    })
}

/// The version columns, in the order [`version_from`] reads them.
pub(crate) const VERSION_COLUMNS: &str =
    "id, version, created_at, kind, title, description, editors, restored_from, doc_bytes, \
     base, delta";

/// The version columns without what the version stores (for lists): the same order, with
/// the stored bytes' length in place of base and delta.
pub(crate) const VERSION_INFO_COLUMNS: &str =
    "id, version, created_at, kind, title, description, editors, restored_from, doc_bytes, \
     CAST(length(coalesce(base, delta)) AS BIGINT)";

/// What thinning reads of a version ([`version_age_from`]).
pub(crate) const VERSION_AGE_COLUMNS: &str = "id, created_at, kind";

/// A version's age from [`VERSION_AGE_COLUMNS`].
pub(crate) fn version_age_from<R: Columns>(row: &R) -> Result<VersionAge, R::Error> {
    Ok(VersionAge {
        id: row.int(0)? as u64,
        created_at: row.int(1)?,
        kind: VersionKind::parse(&row.text(2)?).unwrap_or(VersionKind::Auto),
    })
}

/// A version's info from [`VERSION_INFO_COLUMNS`] (or the first nine of [`VERSION_COLUMNS`],
/// with `bytes` given).
pub(crate) fn version_info_from<R: Columns>(
    row: &R,
    bytes: Option<u64>,
) -> Result<VersionInfo, R::Error> {
    let editors: Vec<String> = serde_json::from_str(&row.text(6)?).unwrap_or_default();
    Ok(VersionInfo {
        id: row.int(0)? as u64,
        version: row.int(1)? as u64,
        created_at: row.int(2)?,
        kind: VersionKind::parse(&row.text(3)?).unwrap_or(VersionKind::Auto),
        title: row.maybe_text(4)?,
        description: row.maybe_text(5)?,
        editors,
        restored_from: row.maybe_int(7)?.map(|v| v as u64),
        doc_bytes: row.maybe_int(8)?.map(|v| v as u64),
        bytes: match bytes {
            Some(b) => b,
            None => row.maybe_int(9)?.unwrap_or(0) as u64,
        },
    })
}

/// A version row from [`VERSION_COLUMNS`].
pub(crate) fn version_from<R: Columns>(row: &R) -> Result<VersionRow, R::Error> {
    let data = match row.maybe_bytes(9)? {
        Some(base) => VersionData::Base(base),
        None => VersionData::Delta(row.maybe_bytes(10)?.unwrap_or_default()),
    };
    let info = version_info_from(row, Some(data.len() as u64))?;
    Ok((info, data))
}
