//! Accounts and sessions: the writes that take more than one statement's call.

use rusqlite::{params, Connection};

use super::now_ms;
use super::rows::{unavailable, unique_or_unavailable};
use crate::ids::AccountId;
use crate::store::{Account, StoreError, StoreResult};

/// [`crate::store::Store::insert_account`]: `Conflict` when the email is taken.
pub(super) fn insert(c: &mut Connection, a: &Account) -> StoreResult<()> {
    c.execute(
        "INSERT INTO accounts (id, email, email_key, name, password_hash, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            a.id.as_str(),
            a.email,
            a.email.to_lowercase(),
            a.name,
            a.password_hash,
            now_ms()
        ],
    )
    .map_err(|e| unique_or_unavailable(e, StoreError::Conflict))?;
    Ok(())
}

/// [`crate::store::Store::delete_sessions_of`]: the digests of the sessions it deleted.
pub(super) fn delete_sessions_of(
    c: &mut Connection,
    account: &AccountId,
) -> StoreResult<Vec<[u8; 32]>> {
    let mut stmt = c
        .prepare("DELETE FROM sessions WHERE account_id = ?1 RETURNING token_digest")
        .map_err(unavailable)?;
    let rows = stmt
        .query_map([account.as_str()], |r| r.get::<_, Vec<u8>>(0))
        .map_err(unavailable)?;
    digests(rows)
}

/// [`crate::store::Store::trim_sessions`]: newest by creation (then by digest, for ties).
pub(super) fn trim_sessions(
    c: &mut Connection,
    account: &AccountId,
    newest: [u8; 32],
    keep: u64,
) -> StoreResult<Vec<[u8; 32]>> {
    let mut stmt = c
        .prepare_cached(
            "DELETE FROM sessions WHERE account_id = ?1 AND token_digest <> ?2
               AND token_digest NOT IN (
                 SELECT token_digest FROM sessions WHERE account_id = ?1 AND token_digest <> ?2
                 ORDER BY created_at DESC, token_digest DESC LIMIT ?3)
             RETURNING token_digest",
        )
        .map_err(unavailable)?;
    let others = keep.saturating_sub(1).min(i64::MAX as u64) as i64;
    let rows = stmt
        .query_map(params![account.as_str(), &newest[..], others], |r| {
            r.get::<_, Vec<u8>>(0)
        })
        .map_err(unavailable)?;
    digests(rows)
}

/// The token digests a `RETURNING token_digest` gave.
fn digests(rows: impl Iterator<Item = rusqlite::Result<Vec<u8>>>) -> StoreResult<Vec<[u8; 32]>> {
    let mut out = Vec::new();
    for row in rows {
        if let Ok(d) = <[u8; 32]>::try_from(row.map_err(unavailable)?.as_slice()) {
            out.push(d);
        }
    }
    Ok(out)
}
