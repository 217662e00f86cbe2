//! The [`Store`] contract on Postgres: accounts and sessions here, the rest in the
//! modules of their concept.

use std::sync::Arc;

use async_trait::async_trait;

use super::rows::{get, insert_error, unavailable, unsigned};
use super::{append, now_ms, Param, PgStore};
use crate::history::{VersionAge, VersionData, VersionInfo, VersionRow, VERSION_ROW_BYTES};
use crate::ids::{AccountId, ClientKey, FileId};
use crate::store::columns::{account_from, file_from, ACCOUNT_COLUMNS, FILE_COLUMNS};
use crate::store::{
    Account, ApiKey, FileAppend, FileRecord, FileUpdate, Holder, LoggedPatch, Revocation,
    SnapshotWrite, Store, StoreError, StoreResult, TakenFile, CLIENT_ROW_BYTES, SERVER_OP_MARK_HEX,
};

#[async_trait]
impl Store for PgStore {
    async fn insert_account(&self, a: &Account) -> StoreResult<()> {
        let params: [&Param<'_>; 6] = [
            &a.id.as_str(),
            &a.email,
            &a.email.to_lowercase(),
            &a.name,
            &a.password_hash,
            &now_ms(),
        ];
        let sql = "INSERT INTO accounts (id, email, email_key, name, password_hash, created_at)
                   VALUES ($1, $2, $3, $4, $5, $6)";
        // Accounts reference nothing: a failed insert is a taken email or unavailable.
        self.execute(sql, &params, insert_error).await.map(drop)
    }

    async fn account_by_email(&self, email: &str) -> StoreResult<Account> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE email_key = $1");
        account_from(&self.query_found(&sql, &[&email.to_lowercase()]).await?)
    }

    async fn account_by_id(&self, id: &AccountId) -> StoreResult<Account> {
        let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE id = $1");
        account_from(&self.query_found(&sql, &[&id.as_str()]).await?)
    }

    async fn create_session(
        &self,
        token_digest: [u8; 32],
        account: &AccountId,
        expires_at: i64,
    ) -> StoreResult<()> {
        let sql = "INSERT INTO sessions (token_digest, account_id, created_at, expires_at)
                   VALUES ($1, $2, $3, $4)";
        let digest = &token_digest[..];
        let params: [&Param<'_>; 4] = [&digest, &account.as_str(), &now_ms(), &expires_at];
        self.execute(sql, &params, insert_error).await.map(drop)
    }

    async fn session_account(&self, token_digest: [u8; 32]) -> StoreResult<Account> {
        let sql = "SELECT a.id, a.email, a.name, a.password_hash
                   FROM sessions s JOIN accounts a ON a.id = s.account_id
                   WHERE s.token_digest = $1 AND s.expires_at > $2";
        account_from(
            &self
                .query_found(sql, &[&&token_digest[..], &now_ms()])
                .await?,
        )
    }

    async fn session_expiry(&self, token_digest: [u8; 32]) -> StoreResult<i64> {
        let sql = "SELECT expires_at FROM sessions WHERE token_digest = $1 AND expires_at > $2";
        get(
            &self
                .query_found(sql, &[&&token_digest[..], &now_ms()])
                .await?,
            0,
        )
    }

    async fn delete_session(&self, token_digest: [u8; 32]) -> StoreResult<()> {
        let sql = "DELETE FROM sessions WHERE token_digest = $1";
        self.execute(sql, &[&&token_digest[..]], unavailable)
            .await
            .map(drop)
    }

    async fn delete_sessions_of(&self, account: &AccountId) -> StoreResult<Vec<[u8; 32]>> {
        let sql = "DELETE FROM sessions WHERE account_id = $1 RETURNING token_digest";
        digests(&self.query(sql, &[&account.as_str()]).await?)
    }

    async fn trim_sessions(
        &self,
        account: &AccountId,
        newest: [u8; 32],
        keep: u64,
    ) -> StoreResult<Vec<[u8; 32]>> {
        let sql = "DELETE FROM sessions WHERE account_id = $1 AND token_digest <> $2
                     AND token_digest NOT IN (
                       SELECT token_digest FROM sessions WHERE account_id = $1
                         AND token_digest <> $2
                       ORDER BY created_at DESC, token_digest DESC LIMIT $3)
                   RETURNING token_digest";
        let others = keep.saturating_sub(1).min(i64::MAX as u64) as i64;
        let params: [&Param<'_>; 3] = [&account.as_str(), &&newest[..], &others];
        digests(&self.query(sql, &params).await?)
    }

    async fn delete_expired_sessions(&self) -> StoreResult<u64> {
        let sql = "DELETE FROM sessions WHERE expires_at <= $1";
        self.execute(sql, &[&now_ms()], unavailable).await
    }

    async fn create_file_capped(
        &self,
        record: &FileRecord,
        doc: Option<String>,
        max_owned: u64,
    ) -> StoreResult<()> {
        self.insert_file(record, doc, max_owned).await
    }

    async fn file(&self, id: &FileId) -> StoreResult<FileRecord> {
        let sql = format!("SELECT {FILE_COLUMNS} FROM files WHERE id = $1");
        file_from(&self.query_found(&sql, &[&id.as_str()]).await?, 0)
    }

    async fn stored_bytes(&self, holder: &Holder) -> StoreResult<u64> {
        let (by, value) = holder.column_and_value();
        // `octet_length` of the text and the blobs, and each writer's and version's row, as
        // the embedded store counts them.
        let sql = format!(
            "SELECT CAST( \
            COALESCE((SELECT SUM(octet_length(s.doc)) FROM snapshots s \
                      JOIN files f ON f.id = s.file_id WHERE f.{by} = $1), 0) \
          + COALESCE((SELECT SUM(octet_length(o.ops)) FROM ops o \
                      JOIN files f ON f.id = o.file_id WHERE f.{by} = $1), 0) \
          + COALESCE((SELECT SUM(COALESCE(octet_length(v.base), 0) \
                               + COALESCE(octet_length(v.delta), 0) \
                               + COALESCE(octet_length(v.title), 0) \
                               + COALESCE(octet_length(v.description), 0) \
                               + octet_length(v.editors) + $3::bigint) FROM versions v \
                      JOIN files f ON f.id = v.file_id WHERE f.{by} = $1), 0) \
          + $2::bigint * (SELECT COUNT(*) FROM client_ops c \
                  JOIN files f ON f.id = c.file_id WHERE f.{by} = $1 \
                  AND substring(c.client from 1 for 8) <> '\\x{SERVER_OP_MARK_HEX}'::bytea) \
          AS BIGINT)"
        );
        let (client_row, version_row) = (CLIENT_ROW_BYTES as i64, VERSION_ROW_BYTES as i64);
        let rows = self
            .query(&sql, &[&value, &client_row, &version_row])
            .await?;
        // A SUM of bigints is a numeric in Postgres: cast back whole.
        let total: i64 = rows[0].get(0);
        Ok(total.max(0) as u64)
    }

    async fn files_of(&self, owner: &AccountId) -> StoreResult<Vec<FileRecord>> {
        let sql = format!(
            "SELECT {FILE_COLUMNS} FROM files WHERE owner = $1 ORDER BY updated_at DESC, id"
        );
        let rows = self.query(&sql, &[&owner.as_str()]).await?;
        rows.iter().map(|r| file_from(r, 0)).collect()
    }

    async fn update_file(&self, id: &FileId, update: FileUpdate) -> StoreResult<FileRecord> {
        self.change_file(id, update).await
    }

    async fn delete_file(&self, id: &FileId) -> StoreResult<()> {
        // The file's epoch raises the floor of later files' epochs (0008_epoch_floor.sql),
        // in the same statement.
        let sql = "WITH gone AS (DELETE FROM files WHERE id = $1 RETURNING epoch),
                        raised AS (UPDATE epoch_floor
                                   SET epoch = GREATEST(epoch, (SELECT epoch FROM gone))
                                   WHERE EXISTS (SELECT 1 FROM gone))
                   SELECT 1 FROM gone";
        match self.execute(sql, &[&id.as_str()], unavailable).await? {
            0 => Err(StoreError::NotFound),
            _ => Ok(()),
        }
    }

    async fn take_file_within(
        &self,
        id: &FileId,
        behind: u64,
        behind_bytes: u64,
    ) -> StoreResult<TakenFile> {
        self.take(id, behind, behind_bytes).await
    }

    async fn append(&self, batch: Arc<[FileAppend]>) -> StoreResult<Vec<StoreResult<()>>> {
        let mut client = self.client().await?;
        append::append(&mut client, &batch).await
    }

    async fn epoch(&self, id: &FileId) -> StoreResult<u64> {
        let sql = "SELECT epoch FROM files WHERE id = $1";
        unsigned(&self.query_found(sql, &[&id.as_str()]).await?, 0)
    }

    async fn client_op(&self, file: &FileId, client: ClientKey) -> StoreResult<Option<(u64, u64)>> {
        let sql = "SELECT op_id, version FROM client_ops WHERE file_id = $1 AND client = $2";
        let row = self
            .query_opt(sql, &[&file.as_str(), &&client.0[..]])
            .await?;
        row.map(|r| Ok((unsigned(&r, 0)?, unsigned(&r, 1)?)))
            .transpose()
    }

    async fn put_snapshot(&self, write: &SnapshotWrite<'_>) -> StoreResult<()> {
        self.save_snapshot(write).await
    }

    async fn snapshot_and_tail(
        &self,
        file: &FileId,
    ) -> StoreResult<(Option<(u64, String)>, Vec<LoggedPatch>)> {
        self.tail(file).await
    }

    async fn ping(&self) -> bool {
        self.answers().await
    }

    async fn insert_version(
        &self,
        file: &FileId,
        epoch: u64,
        info: &VersionInfo,
        data: &VersionData,
    ) -> StoreResult<u64> {
        self.put_version(file, epoch, info, data).await
    }

    async fn versions(
        &self,
        file: &FileId,
        before: Option<u64>,
        limit: u64,
    ) -> StoreResult<Vec<VersionInfo>> {
        self.list_versions(file, before, limit).await
    }

    async fn version_ages(&self, file: &FileId) -> StoreResult<Vec<VersionAge>> {
        self.version_ages_of(file).await
    }

    async fn version_chain(&self, file: &FileId, id: u64) -> StoreResult<Vec<VersionRow>> {
        self.chain_of(file, id).await
    }

    async fn version_after(&self, file: &FileId, id: u64) -> StoreResult<Option<VersionRow>> {
        self.next_version(file, id).await
    }

    async fn name_version(
        &self,
        file: &FileId,
        id: u64,
        title: Option<String>,
        description: Option<Option<String>>,
    ) -> StoreResult<VersionInfo> {
        self.rename_version(file, id, title, description).await
    }

    async fn drop_version(
        &self,
        file: &FileId,
        epoch: u64,
        id: u64,
        next: Option<(u64, VersionData)>,
    ) -> StoreResult<()> {
        self.remove_version(file, epoch, id, next).await
    }

    async fn create_api_key(&self, key: &ApiKey, digest: [u8; 32]) -> StoreResult<()> {
        self.insert_api_key(key, digest).await
    }

    async fn api_key(&self, digest: [u8; 32]) -> StoreResult<ApiKey> {
        self.api_key_by_digest(digest).await
    }

    async fn api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.all_api_keys().await
    }

    async fn delete_api_key(&self, id: &str) -> StoreResult<()> {
        self.remove_api_key(id).await
    }

    async fn add_revocation(&self, r: &Revocation, until_ms: i64) -> StoreResult<()> {
        self.upsert_revocation(r, until_ms).await
    }

    async fn revocations(&self) -> StoreResult<Vec<(Revocation, i64)>> {
        self.live_revocations().await
    }

    async fn files_with_prefix(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u64,
    ) -> StoreResult<Vec<FileRecord>> {
        self.prefixed_files(prefix, after, limit).await
    }

    async fn prune_server_ops(&self, before_ms: i64) -> StoreResult<u64> {
        self.forget_server_ops(before_ms).await
    }
}

/// The token digests a `RETURNING token_digest` gave.
fn digests(rows: &[tokio_postgres::Row]) -> StoreResult<Vec<[u8; 32]>> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let d: &[u8] = get(row, 0)?;
        if let Ok(d) = <[u8; 32]>::try_from(d) {
            out.push(d);
        }
    }
    Ok(out)
}
