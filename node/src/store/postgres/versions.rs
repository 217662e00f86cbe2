//! Version history rows (see `crate::history`): insert and drop fenced by the epoch.

use deadpool_postgres::Transaction;

use super::bulk::OwnedParam;
use super::rows::{big, get, unavailable};
use super::{prepare, Param, PgStore};
use crate::history::{VersionAge, VersionData, VersionInfo, VersionRow};
use crate::ids::FileId;
use crate::store::columns::{
    version_age_from, version_from, version_info_from, VERSION_AGE_COLUMNS, VERSION_COLUMNS,
    VERSION_INFO_COLUMNS,
};
use crate::store::{StoreError, StoreResult};

/// Checks the writer's epoch, holding the file's row until commit (no takeover between).
async fn fence(tx: &Transaction<'_>, file: &FileId, epoch: u64) -> StoreResult<()> {
    let fence = prepare(tx, "SELECT epoch FROM files WHERE id = $1 FOR UPDATE").await?;
    let current: i64 = tx
        .query_opt(&fence, &[&file.as_str()])
        .await
        .map_err(unavailable)?
        .ok_or(StoreError::NotFound)
        .and_then(|r| get(&r, 0))?;
    if current != big(epoch) {
        return Err(StoreError::Fenced);
    }
    Ok(())
}

fn blobs(data: &VersionData) -> (Option<&[u8]>, Option<&[u8]>) {
    match data {
        VersionData::Base(b) => (Some(b.as_slice()), None),
        VersionData::Delta(d) => (None, Some(d.as_slice())),
    }
}

impl PgStore {
    pub(super) async fn put_version(
        &self,
        file: &FileId,
        epoch: u64,
        info: &VersionInfo,
        data: &VersionData,
    ) -> StoreResult<u64> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        fence(&tx, file, epoch).await?;
        let next = prepare(
            &tx,
            "INSERT INTO version_ids (file_id, next_id) VALUES ($1, 2)
             ON CONFLICT (file_id) DO UPDATE SET next_id = version_ids.next_id + 1
             RETURNING next_id - 1",
        )
        .await?;
        let id: i64 = get(
            &tx.query_one(&next, &[&file.as_str()])
                .await
                .map_err(unavailable)?,
            0,
        )?;
        let insert = prepare(
            &tx,
            "INSERT INTO versions (file_id, id, version, created_at, kind, title, description,
                                   editors, restored_from, doc_bytes, base, delta)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .await?;
        let (base, delta) = blobs(data);
        let editors = serde_json::to_string(&info.editors).expect("names serialize");
        let restored = info.restored_from.map(big);
        let doc_bytes = info.doc_bytes.map(big);
        let params: [&Param<'_>; 12] = [
            &file.as_str(),
            &id,
            &big(info.version),
            &info.created_at,
            &info.kind.as_str(),
            &info.title,
            &info.description,
            &editors,
            &restored,
            &doc_bytes,
            &base,
            &delta,
        ];
        tx.execute(&insert, &params).await.map_err(unavailable)?;
        // `version.created` in the version's own commit.
        let event = crate::webhook::event::version_created(file, id as u64, info);
        super::webhooks::record(&tx, &[event]).await?;
        tx.commit().await.map_err(unavailable)?;
        Ok(id as u64)
    }

    /// [`crate::store::Store::version_ages`].
    pub(super) async fn version_ages_of(&self, file: &FileId) -> StoreResult<Vec<VersionAge>> {
        let sql = format!(
            "SELECT {VERSION_AGE_COLUMNS} FROM versions WHERE file_id = $1 ORDER BY id DESC"
        );
        let rows = self.query(&sql, &[&file.as_str()]).await?;
        rows.iter().map(version_age_from).collect()
    }

    pub(super) async fn list_versions(
        &self,
        file: &FileId,
        before: Option<u64>,
        limit: u64,
    ) -> StoreResult<Vec<VersionInfo>> {
        let sql = format!(
            "SELECT {VERSION_INFO_COLUMNS} FROM versions
             WHERE file_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3"
        );
        let before = before.map_or(i64::MAX, big);
        let rows = self
            .query(&sql, &[&file.as_str(), &before, &big(limit)])
            .await?;
        rows.iter().map(|r| version_info_from(r, None)).collect()
    }

    /// A version's chain of rows, read and decoded on the bulk thread ([`super::bulk`]).
    pub(super) async fn chain_of(&self, file: &FileId, id: u64) -> StoreResult<Vec<VersionRow>> {
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM versions
             WHERE file_id = $1 AND id <= $2 AND id >= coalesce((
                 SELECT max(id) FROM versions
                 WHERE file_id = $1 AND id <= $2 AND base IS NOT NULL), 0)
             ORDER BY id"
        );
        let params: Vec<OwnedParam> = vec![Box::new(file.as_str().to_owned()), Box::new(big(id))];
        let rows = self
            .bulk
            .query(sql, params, |rows| {
                rows.iter()
                    .map(version_from)
                    .collect::<StoreResult<Vec<_>>>()
            })
            .await?;
        if rows.last().is_none_or(|(info, _)| info.id != id) {
            return Err(StoreError::NotFound);
        }
        Ok(rows)
    }

    pub(super) async fn next_version(
        &self,
        file: &FileId,
        id: u64,
    ) -> StoreResult<Option<VersionRow>> {
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM versions WHERE file_id = $1 AND id > $2
             ORDER BY id LIMIT 1"
        );
        let params: Vec<OwnedParam> = vec![Box::new(file.as_str().to_owned()), Box::new(big(id))];
        self.bulk
            .query(sql, params, |rows| {
                rows.first().map(version_from).transpose()
            })
            .await
    }

    pub(super) async fn rename_version(
        &self,
        file: &FileId,
        id: u64,
        title: Option<String>,
        description: Option<Option<String>>,
    ) -> StoreResult<VersionInfo> {
        let (set_description, description) = match description {
            Some(d) => (true, d),
            None => (false, None),
        };
        let sql = format!(
            "UPDATE versions SET kind = 'named', title = coalesce($3, title),
                 description = CASE WHEN $4 THEN $5 ELSE description END
             WHERE file_id = $1 AND id = $2
             RETURNING {VERSION_INFO_COLUMNS}"
        );
        let params: [&Param<'_>; 5] = [
            &file.as_str(),
            &big(id),
            &title,
            &set_description,
            &description,
        ];
        version_info_from(&self.query_found(&sql, &params).await?, None)
    }

    pub(super) async fn remove_version(
        &self,
        file: &FileId,
        epoch: u64,
        id: u64,
        next: Option<(u64, VersionData)>,
    ) -> StoreResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        fence(&tx, file, epoch).await?;
        let delete = prepare(&tx, "DELETE FROM versions WHERE file_id = $1 AND id = $2").await?;
        let n = tx
            .execute(&delete, &[&file.as_str(), &big(id)])
            .await
            .map_err(unavailable)?;
        if n == 0 {
            return Err(StoreError::NotFound);
        }
        if let Some((next, data)) = next {
            let update = prepare(
                &tx,
                "UPDATE versions SET base = $3, delta = $4 WHERE file_id = $1 AND id = $2",
            )
            .await?;
            let (base, delta) = blobs(&data);
            tx.execute(&update, &[&file.as_str(), &big(next), &base, &delta])
                .await
                .map_err(unavailable)?;
        }
        tx.commit().await.map_err(unavailable)
    }
}
