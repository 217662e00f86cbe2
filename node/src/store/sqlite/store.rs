//! The [`Store`] contract on SQLite: accounts, sessions and the journal's reads here,
//! files in [`super::files`].

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use super::append::append_batch;
use super::parts::{self, Stored};
use super::rows::{found, read_file, unavailable};
use super::{now_ms, versions, SqliteStore};
use crate::history::{VersionAge, VersionData, VersionInfo, VersionRow};
use crate::ids::{AccountId, ClientKey, FileId};
use crate::store::columns::{account_from, ACCOUNT_COLUMNS};
use crate::store::{
    Account, ApiKey, FileAppend, FileRecord, FileUpdate, Holder, LoggedPatch, Revocation,
    SnapshotWrite, Store, StoreError, StoreResult, TakenFile,
};

#[async_trait]
impl Store for SqliteStore {
    async fn insert_account(&self, account: &Account) -> StoreResult<()> {
        let a = account.clone();
        self.run(move |c| super::accounts::insert(c, &a)).await
    }

    async fn account_by_email(&self, email: &str) -> StoreResult<Account> {
        let (sql, email) = (
            format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE email_key = ?1"),
            email.to_lowercase(),
        );
        self.read(move |c| found(c, &sql, [email], |r| account_from(r)))
            .await
    }

    async fn account_by_id(&self, id: &AccountId) -> StoreResult<Account> {
        let (sql, id) = (
            format!("SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE id = ?1"),
            id.clone(),
        );
        self.read(move |c| found(c, &sql, [id.as_str()], |r| account_from(r)))
            .await
    }

    async fn create_session(
        &self,
        token_digest: [u8; 32],
        account: &AccountId,
        expires_at: i64,
    ) -> StoreResult<()> {
        let account = account.clone();
        self.run(move |c| {
            c.execute(
                "INSERT INTO sessions (token_digest, account_id, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![&token_digest[..], account.as_str(), now_ms(), expires_at],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    async fn session_account(&self, token_digest: [u8; 32]) -> StoreResult<Account> {
        let sql = "SELECT a.id, a.email, a.name, a.password_hash
                   FROM sessions s JOIN accounts a ON a.id = s.account_id
                   WHERE s.token_digest = ?1 AND s.expires_at > ?2";
        self.read(move |c| {
            found(c, sql, params![&token_digest[..], now_ms()], |r| {
                account_from(r)
            })
        })
        .await
    }

    async fn session_expiry(&self, token_digest: [u8; 32]) -> StoreResult<i64> {
        let sql = "SELECT expires_at FROM sessions WHERE token_digest = ?1 AND expires_at > ?2";
        self.read(move |c| found(c, sql, params![&token_digest[..], now_ms()], |r| r.get(0)))
            .await
    }

    async fn delete_session(&self, token_digest: [u8; 32]) -> StoreResult<()> {
        let sql = "DELETE FROM sessions WHERE token_digest = ?1";
        self.run(move |c| c.execute(sql, [&token_digest[..]]).map_err(unavailable))
            .await
            .map(drop)
    }

    async fn delete_sessions_of(&self, account: &AccountId) -> StoreResult<Vec<[u8; 32]>> {
        let account = account.clone();
        self.run(move |c| super::accounts::delete_sessions_of(c, &account))
            .await
    }

    async fn trim_sessions(
        &self,
        account: &AccountId,
        newest: [u8; 32],
        keep: u64,
    ) -> StoreResult<Vec<[u8; 32]>> {
        let account = account.clone();
        self.run(move |c| super::accounts::trim_sessions(c, &account, newest, keep))
            .await
    }

    async fn delete_expired_sessions(&self) -> StoreResult<u64> {
        self.run(move |c| {
            c.execute("DELETE FROM sessions WHERE expires_at <= ?1", [now_ms()])
                .map(|n| n as u64)
                .map_err(unavailable)
        })
        .await
    }

    async fn create_file_capped(
        &self,
        record: &FileRecord,
        doc: Option<String>,
        max_owned: u64,
    ) -> StoreResult<()> {
        let (r, writer) = (record.clone(), self.writer.clone());
        if doc.as_deref().is_some_and(parts::in_parts) {
            let r = r.clone();
            self.read(move |c| super::files::room_for(c, &r, max_owned))
                .await?;
        }
        Self::blocking(move || {
            let doc = doc
                .as_deref()
                .map(|d| parts::prepare(&writer, d))
                .transpose()?;
            let made = super::files::insert(&mut writer.ordinary(), &r, doc.as_ref(), max_owned);
            if let (Err(_), Some(id)) = (&made, doc.as_ref().and_then(Stored::parts)) {
                parts::forget(&writer, id);
            }
            made
        })
        .await
    }

    async fn file(&self, id: &FileId) -> StoreResult<FileRecord> {
        let id = id.clone();
        self.read(move |c| read_file(c, &id)).await
    }

    async fn stored_bytes(&self, holder: &Holder) -> StoreResult<u64> {
        let holder = holder.clone();
        self.read(move |c| super::files::stored_bytes(c, &holder))
            .await
    }

    async fn files_of(&self, owner: &AccountId) -> StoreResult<Vec<FileRecord>> {
        let owner = owner.clone();
        self.read(move |c| super::files::of_owner(c, &owner)).await
    }

    async fn update_file(&self, id: &FileId, update: FileUpdate) -> StoreResult<FileRecord> {
        let id = id.clone();
        self.run(move |c| super::files::change(c, &id, &update))
            .await
    }

    async fn delete_file(&self, id: &FileId) -> StoreResult<()> {
        let id = id.clone();
        self.run(move |c| {
            let tx = c.transaction().map_err(unavailable)?;
            // The row goes with its file (a foreign key); its parts have none.
            if let Some(parts) = parts::named(&tx, id.as_str())? {
                parts::remove(&tx, parts)?;
            }
            // Later files start above its epoch (schema.sql, `epoch_floor`).
            tx.execute(
                "UPDATE epoch_floor SET epoch =
                   MAX(epoch, COALESCE((SELECT epoch FROM files WHERE id = ?1), 0))",
                [id.as_str()],
            )
            .map_err(unavailable)?;
            let n = tx
                .execute("DELETE FROM files WHERE id = ?1", [id.as_str()])
                .map_err(unavailable)?;
            if n == 0 {
                return Err(StoreError::NotFound);
            }
            tx.commit().map_err(unavailable)
        })
        .await
    }

    async fn take_file_within(
        &self,
        id: &FileId,
        behind: u64,
        behind_bytes: u64,
    ) -> StoreResult<TakenFile> {
        let taking = id.clone();
        let epoch = self
            .run(move |c| super::log::raise_epoch(c, &taking))
            .await?;
        let id = id.clone();
        self.read(move |c| super::log::read_taken(c, &id, epoch, behind, behind_bytes))
            .await
    }

    async fn append(&self, batch: Arc<[FileAppend]>) -> StoreResult<Vec<StoreResult<()>>> {
        // The journal's commit: ahead of other writes that wait for the connection.
        let writer = self.writer.clone();
        let webhooks = self.webhooks_on.load(std::sync::atomic::Ordering::Acquire);
        Self::blocking(move || append_batch(&writer, &batch, webhooks)).await
    }

    async fn epoch(&self, id: &FileId) -> StoreResult<u64> {
        let id = id.clone();
        let sql = "SELECT epoch FROM files WHERE id = ?1";
        self.read(move |c| found(c, sql, params![id.as_str()], |r| r.get::<_, i64>(0)))
            .await
            .map(|e| e as u64)
    }

    async fn client_op(&self, file: &FileId, client: ClientKey) -> StoreResult<Option<(u64, u64)>> {
        let file = file.clone();
        self.read(move |c| {
            c.query_row(
                "SELECT op_id, version FROM client_ops WHERE file_id = ?1 AND client = ?2",
                params![file.as_str(), &client.0[..]],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .optional()
            .map_err(unavailable)
        })
        .await
    }

    async fn put_snapshot(&self, write: &SnapshotWrite<'_>) -> StoreResult<()> {
        // Owned, for the blocking thread.
        let (file, doc) = (write.file.clone(), write.doc.to_owned());
        let (epoch, version, keep) = (write.epoch, write.version, write.keep);
        let writer = self.writer.clone();
        Self::blocking(move || {
            let write = SnapshotWrite {
                file: &file,
                epoch,
                version,
                doc: &doc,
                keep,
            };
            let stored = parts::prepare(&writer, &doc)?;
            let written = super::log::snapshot(&mut writer.ordinary(), &write, &stored);
            if let (Err(_), Some(id)) = (&written, stored.parts()) {
                parts::forget(&writer, id);
            }
            written
        })
        .await
    }

    async fn snapshot_and_tail(
        &self,
        file: &FileId,
    ) -> StoreResult<(Option<(u64, String)>, Vec<LoggedPatch>)> {
        let file = file.clone();
        self.read(move |c| super::log::tail(c, &file)).await
    }

    async fn ping(&self) -> bool {
        self.read(|c| c.query_row("SELECT 1", [], |_| Ok(())).map_err(unavailable))
            .await
            .is_ok()
    }

    async fn insert_version(
        &self,
        file: &FileId,
        epoch: u64,
        info: &VersionInfo,
        data: &VersionData,
    ) -> StoreResult<u64> {
        let (file, info, data) = (file.clone(), info.clone(), data.clone());
        self.run(move |c| versions::insert(c, &file, epoch, &info, &data))
            .await
    }

    async fn versions(
        &self,
        file: &FileId,
        before: Option<u64>,
        limit: u64,
    ) -> StoreResult<Vec<VersionInfo>> {
        let file = file.clone();
        self.read(move |c| versions::list(c, &file, before, limit))
            .await
    }

    async fn version_ages(&self, file: &FileId) -> StoreResult<Vec<VersionAge>> {
        let file = file.clone();
        self.read(move |c| versions::ages(c, &file)).await
    }

    async fn version_chain(&self, file: &FileId, id: u64) -> StoreResult<Vec<VersionRow>> {
        let file = file.clone();
        self.read_bulk(move |c| versions::chain(c, &file, id)).await
    }

    async fn version_after(&self, file: &FileId, id: u64) -> StoreResult<Option<VersionRow>> {
        let file = file.clone();
        self.read(move |c| versions::after(c, &file, id)).await
    }

    async fn name_version(
        &self,
        file: &FileId,
        id: u64,
        title: Option<String>,
        description: Option<Option<String>>,
    ) -> StoreResult<VersionInfo> {
        let file = file.clone();
        self.run(move |c| versions::name(c, &file, id, title, description))
            .await
    }

    async fn drop_version(
        &self,
        file: &FileId,
        epoch: u64,
        id: u64,
        next: Option<(u64, VersionData)>,
    ) -> StoreResult<()> {
        let file = file.clone();
        self.run(move |c| versions::drop(c, &file, epoch, id, next))
            .await
    }

    async fn create_api_key(&self, key: &ApiKey, digest: [u8; 32]) -> StoreResult<()> {
        let k = key.clone();
        self.run(move |c| super::app_keys::insert_key(c, &k, digest))
            .await
    }

    async fn api_key(&self, digest: [u8; 32]) -> StoreResult<ApiKey> {
        let sql = format!(
            "SELECT {} FROM api_keys WHERE key_digest = ?1",
            super::app_keys::API_KEY_COLUMNS
        );
        self.read(move |c| found(c, &sql, [&digest[..]], super::app_keys::api_key_from))
            .await
    }

    async fn api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        self.read(|c| super::app_keys::list_keys(c)).await
    }

    async fn delete_api_key(&self, id: &str) -> StoreResult<()> {
        let id = id.to_owned();
        let n = self
            .run(move |c| {
                c.execute("DELETE FROM api_keys WHERE id = ?1", [id])
                    .map_err(unavailable)
            })
            .await?;
        if n == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn add_revocation(&self, r: &Revocation, until_ms: i64) -> StoreResult<()> {
        let r = r.clone();
        self.run(move |c| super::app_keys::upsert_revocation(c, &r, until_ms))
            .await
    }

    async fn revocations(&self) -> StoreResult<Vec<(Revocation, i64)>> {
        self.read(|c| super::app_keys::list_revocations(c)).await
    }

    async fn files_with_prefix(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u64,
    ) -> StoreResult<Vec<FileRecord>> {
        let (prefix, after) = (prefix.to_owned(), after.map(str::to_owned));
        self.read(move |c| super::server::with_prefix(c, &prefix, after.as_deref(), limit))
            .await
    }

    async fn prune_server_ops(&self, before_ms: i64) -> StoreResult<u64> {
        self.run(move |c| super::server::prune(c, before_ms)).await
    }
}
