//! API keys and app-token revocations on Postgres.

use tokio_postgres::Row;

use super::rows::{get, insert_error, unavailable};
use super::{now_ms, Param, PgStore};
use crate::store::{ApiKey, Revocation, StoreError, StoreResult};

const API_KEY_COLUMNS: &str = "id, name, scopes, created_at";

fn api_key_from(r: &Row) -> StoreResult<ApiKey> {
    let scopes: String = get(r, 2)?;
    Ok(ApiKey {
        id: get(r, 0)?,
        name: get(r, 1)?,
        scopes: scopes
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        created_at: get(r, 3)?,
    })
}

impl PgStore {
    pub(super) async fn insert_api_key(&self, k: &ApiKey, digest: [u8; 32]) -> StoreResult<()> {
        let sql = "INSERT INTO api_keys (id, key_digest, name, scopes, created_at)
                   VALUES ($1, $2, $3, $4, $5)";
        let (d, scopes) = (&digest[..], k.scopes.join(","));
        let params: [&Param<'_>; 5] = [&k.id, &d, &k.name, &scopes, &k.created_at];
        self.execute(sql, &params, insert_error).await.map(drop)
    }

    pub(super) async fn api_key_by_digest(&self, digest: [u8; 32]) -> StoreResult<ApiKey> {
        let sql = format!("SELECT {API_KEY_COLUMNS} FROM api_keys WHERE key_digest = $1");
        api_key_from(&self.query_found(&sql, &[&&digest[..]]).await?)
    }

    pub(super) async fn all_api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        let sql = format!("SELECT {API_KEY_COLUMNS} FROM api_keys ORDER BY created_at, id");
        self.query(&sql, &[])
            .await?
            .iter()
            .map(api_key_from)
            .collect()
    }

    pub(super) async fn remove_api_key(&self, id: &str) -> StoreResult<()> {
        let n = self
            .execute("DELETE FROM api_keys WHERE id = $1", &[&id], unavailable)
            .await?;
        if n == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    pub(super) async fn upsert_revocation(&self, r: &Revocation, until: i64) -> StoreResult<()> {
        let sql = "INSERT INTO revocations (kind, value, at_s, until_ms) VALUES ($1, $2, $3, $4)
                   ON CONFLICT (kind, value) DO UPDATE
                       SET at_s = GREATEST(revocations.at_s, excluded.at_s),
                           until_ms = GREATEST(revocations.until_ms, excluded.until_ms)";
        for (kind, value) in [("sub", &r.sub), ("jti", &r.jti)] {
            let Some(value) = value else { continue };
            let params: [&Param<'_>; 4] = [&kind, value, &r.at, &until];
            self.execute(sql, &params, unavailable).await?;
        }
        self.execute(
            "DELETE FROM revocations WHERE until_ms <= $1",
            &[&now_ms()],
            unavailable,
        )
        .await
        .map(drop)
    }

    pub(super) async fn live_revocations(&self) -> StoreResult<Vec<(Revocation, i64)>> {
        let rows = self
            .query(
                "SELECT kind, value, at_s, until_ms FROM revocations WHERE until_ms > $1",
                &[&now_ms()],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let kind: String = get(r, 0)?;
                let value: String = get(r, 1)?;
                Ok((
                    Revocation {
                        sub: (kind == "sub").then(|| value.clone()),
                        jti: (kind == "jti").then_some(value),
                        at: get(r, 2)?,
                    },
                    get(r, 3)?,
                ))
            })
            .collect()
    }
}
