//! Files: creation under the owner's cap, and changes to their settings.

use super::rows::{get, insert_error, unavailable};
use super::{now_ms, prepare, Param, PgStore};
use crate::store::columns::{file_from, FILE_COLUMNS};
use crate::store::{FileRecord, FileUpdate, LinkAccess, StoreError, StoreResult};

impl PgStore {
    /// [`crate::store::Store::create_file_capped`].
    pub(super) async fn insert_file(
        &self,
        record: &FileRecord,
        doc: Option<String>,
        max_owned: u64,
    ) -> StoreResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        if max_owned < u64::MAX {
            // The owner's row, locked until commit, serialises its creations on
            // every node: the count below cannot be overtaken by a concurrent insert.
            let lock = prepare(&tx, "SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE").await?;
            let count = prepare(&tx, "SELECT count(*) FROM files WHERE owner = $1").await?;
            tx.query_opt(&lock, &[&record.owner.as_str()])
                .await
                .map_err(unavailable)?
                .ok_or(StoreError::NotFound)?;
            let owned: i64 = get(
                &tx.query_one(&count, &[&record.owner.as_str()])
                    .await
                    .map_err(unavailable)?,
                0,
            )?;
            if owned as u64 >= max_owned {
                return Err(StoreError::Full);
            }
        }
        let insert = prepare(
            &tx,
            "INSERT INTO files (id, owner, name, link, view_key, edit_key, key_generation,
                                    epoch, version, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, 0, 0, 0, $7, $7)",
        )
        .await?;
        tx.execute(
            &insert,
            &[
                &record.id.as_str(),
                &record.owner.as_str(),
                &record.name,
                &record.link.as_str(),
                &record.view_key,
                &record.edit_key,
                &record.updated_at,
            ],
        )
        .await
        .map_err(insert_error)?;
        // The epoch, one above the floor (0008_epoch_floor.sql), in a statement after the
        // insert: a delete of this id still committing as the insert began (its row gone,
        // the insert waiting on it) raises the floor only as it commits, and a statement's
        // reads are of the moment it starts.
        let floor = prepare(
            &tx,
            "UPDATE files SET epoch = (SELECT epoch + 1 FROM epoch_floor) WHERE id = $1",
        )
        .await?;
        tx.execute(&floor, &[&record.id.as_str()])
            .await
            .map_err(unavailable)?;
        if let Some(doc) = doc {
            let snapshot = prepare(
                &tx,
                "INSERT INTO snapshots (file_id, version, doc) VALUES ($1, 0, $2)",
            )
            .await?;
            tx.execute(&snapshot, &[&record.id.as_str(), &doc])
                .await
                .map_err(unavailable)?;
        }
        tx.commit().await.map_err(unavailable)
    }

    /// [`crate::store::Store::update_file`], in one statement: fields left `None` keep
    /// their values, a key rotation bumps the generation, and `updated_at` moves only
    /// when something changed.
    pub(super) async fn change_file(
        &self,
        id: &crate::ids::FileId,
        update: FileUpdate,
    ) -> StoreResult<FileRecord> {
        let (view, edit) = match &update.keys {
            Some((view, edit)) => (Some(view.as_str()), Some(edit.as_str())),
            None => (None, None),
        };
        let sql = format!(
            "UPDATE files SET
                 name = COALESCE($2::text, name),
                 link = COALESCE($3::text, link),
                 view_key = COALESCE($4::text, view_key),
                 edit_key = COALESCE($5::text, edit_key),
                 key_generation = key_generation
                     + CASE WHEN $4::text IS NULL THEN 0 ELSE 1 END,
                 viewers_see_history = COALESCE($7::bigint, viewers_see_history),
                 updated_at = CASE
                     WHEN $2::text IS NULL AND $3::text IS NULL AND $4::text IS NULL
                          AND $7::bigint IS NULL
                     THEN updated_at ELSE $6 END
             WHERE id = $1
             RETURNING {FILE_COLUMNS}"
        );
        let see = update.viewers_see_history.map(i64::from);
        let params: [&Param<'_>; 7] = [
            &id.as_str(),
            &update.name.as_deref(),
            &update.link.map(LinkAccess::as_str),
            &view,
            &edit,
            &now_ms(),
            &see,
        ];
        file_from(&self.query_found(&sql, &params).await?, 0)
    }
}
