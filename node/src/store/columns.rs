//! Records out of result rows, assembled once for every store: each store says how it
//! reads one column of its rows ([`Columns`]), the records are built here.

use super::{Account, FileRecord, LinkAccess, LoggedPatch};
use crate::ids::{AccountId, ClientKey, FileId};

/// The file columns, in the order [`file_from`] reads them.
pub(crate) const FILE_COLUMNS: &str =
    "id, owner, name, link, view_key, edit_key, key_generation, version, updated_at";

/// The account columns, in the order [`account_from`] reads them.
pub(crate) const ACCOUNT_COLUMNS: &str = "id, email, name, password_hash";

/// One result row of a store's database, read column by column.
pub(crate) trait Columns {
    type Error;
    fn text(&self, i: usize) -> Result<String, Self::Error>;
    fn maybe_text(&self, i: usize) -> Result<Option<String>, Self::Error>;
    fn int(&self, i: usize) -> Result<i64, Self::Error>;
    fn bytes(&self, i: usize) -> Result<Vec<u8>, Self::Error>;
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
