//! The server API's queries on Postgres: files by id prefix (compared byte by byte, on the
//! index of migration 5), and forgetting old server op ids.

use super::rows::unavailable;
use super::{Param, PgStore};
use crate::store::columns::{file_from, FILE_COLUMNS};
use crate::store::{FileRecord, StoreResult, SERVER_OP_MARK_HEX};

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

    /// On migration 5's partial index, whose predicate this spells the same way.
    pub(super) async fn forget_server_ops(&self, before_ms: i64) -> StoreResult<u64> {
        let sql = format!(
            "DELETE FROM client_ops
             WHERE substring(client from 1 for 8) = '\\x{SERVER_OP_MARK_HEX}'::bytea AND op_id < $1"
        );
        self.execute(&sql, &[&before_ms], unavailable).await
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{SERVER_OP_MARK, SERVER_OP_MARK_HEX};

    /// The partial index serves the sweep only if both spell the mark the same way.
    #[test]
    fn the_migration_spells_the_mark_as_the_code_does() {
        let hex: String = SERVER_OP_MARK.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, SERVER_OP_MARK_HEX);
        let migration = include_str!("../../../migrations/postgres/0005_server_api.sql");
        assert!(migration.contains(&format!(
            "substring(client from 1 for 8) = '\\x{hex}'::bytea"
        )));
    }
}
