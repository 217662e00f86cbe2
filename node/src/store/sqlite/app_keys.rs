//! API keys and app-token revocations on SQLite.

use rusqlite::{params, Connection};

use super::now_ms;
use super::rows::{unavailable, unique_or_unavailable};
use crate::store::{ApiKey, Revocation, StoreError, StoreResult};

pub(super) fn api_key_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<ApiKey> {
    let scopes: String = r.get(2)?;
    Ok(ApiKey {
        id: r.get(0)?,
        name: r.get(1)?,
        scopes: scopes
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        created_at: r.get(3)?,
    })
}

pub(super) const API_KEY_COLUMNS: &str = "id, name, scopes, created_at";

pub(super) fn insert_key(c: &mut Connection, k: &ApiKey, digest: [u8; 32]) -> StoreResult<()> {
    c.execute(
        "INSERT INTO api_keys (id, key_digest, name, scopes, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![k.id, &digest[..], k.name, k.scopes.join(","), k.created_at],
    )
    .map_err(|e| unique_or_unavailable(e, StoreError::Conflict))?;
    Ok(())
}

pub(super) fn list_keys(c: &Connection) -> StoreResult<Vec<ApiKey>> {
    let mut stmt = c
        .prepare(&format!(
            "SELECT {API_KEY_COLUMNS} FROM api_keys ORDER BY created_at, id"
        ))
        .map_err(unavailable)?;
    let rows = stmt.query_map([], api_key_from).map_err(unavailable)?;
    rows.map(|r| r.map_err(unavailable)).collect()
}

pub(super) fn upsert_revocation(c: &mut Connection, r: &Revocation, until: i64) -> StoreResult<()> {
    let entries = [("sub", &r.sub), ("jti", &r.jti)];
    for (kind, value) in entries {
        let Some(value) = value else { continue };
        c.execute(
            "INSERT INTO revocations (kind, value, at_s, until_ms) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (kind, value) DO UPDATE
                 SET at_s = max(at_s, excluded.at_s), until_ms = max(until_ms, excluded.until_ms)",
            params![kind, value, r.at, until],
        )
        .map_err(unavailable)?;
    }
    c.execute("DELETE FROM revocations WHERE until_ms <= ?1", [now_ms()])
        .map_err(unavailable)?;
    Ok(())
}

pub(super) fn list_revocations(c: &Connection) -> StoreResult<Vec<(Revocation, i64)>> {
    let mut stmt = c
        .prepare("SELECT kind, value, at_s, until_ms FROM revocations WHERE until_ms > ?1")
        .map_err(unavailable)?;
    let rows = stmt
        .query_map([now_ms()], |r| {
            let kind: String = r.get(0)?;
            let value: String = r.get(1)?;
            let rev = Revocation {
                sub: (kind == "sub").then(|| value.clone()),
                jti: (kind == "jti").then_some(value),
                at: r.get(2)?,
            };
            Ok((rev, r.get::<_, i64>(3)?))
        })
        .map_err(unavailable)?;
    rows.map(|r| r.map_err(unavailable)).collect()
}
