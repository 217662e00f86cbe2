//! The server API's queries on Postgres: files by id prefix (compared byte by byte, on the
//! index of migration 5), and forgetting old server op ids.

use super::rows::unavailable;
use super::{Param, PgStore};
use crate::store::columns::{file_from, FILE_COLUMNS};
use crate::store::{FileRecord, StoreResult};

impl PgStore {
    pub(super) async fn prefixed_files(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: u64,
    ) -> StoreResult<Vec<FileRecord>> {
        let sql = format!(
            "SELECT {FILE_COLUMNS} FROM files
             WHERE id COLLATE \"C\" >= $1 AND id COLLATE \"C\" < $2 AND id COLLATE \"C\" > $3
             ORDER BY id COLLATE \"C\" LIMIT $4"
        );
        let end = format!("{prefix}~");
        let (after, limit) = (after.unwrap_or(""), limit as i64);
        let params: [&Param<'_>; 4] = [&prefix, &end, &after, &limit];
        let rows = self.query(&sql, &params).await?;
        rows.iter().map(|r| file_from(r, 0)).collect()
    }

    pub(super) async fn forget_server_ops(
        &self,
        mark: [u8; 8],
        before_ms: i64,
    ) -> StoreResult<u64> {
        let sql = "DELETE FROM client_ops WHERE substring(client from 1 for 8) = $1 AND op_id < $2";
        let m = &mark[..];
        self.execute(sql, &[&m, &before_ms], unavailable).await
    }
}
