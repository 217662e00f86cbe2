//! The embedded store's schema, and bringing an older store up to date.

use rusqlite::Connection;

pub(super) const SCHEMA: &str = include_str!("schema.sql");

/// Brings a store made by an older node up to date (each step idempotent).
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    // Sessions gained an expiry: older ones get the default lifetime (30 days)
    // from their creation.
    let has_expiry = conn
        .prepare("SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'expires_at'")?
        .exists([])?;
    if !has_expiry {
        conn.execute_batch(
            "ALTER TABLE sessions ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    // Files gained the setting that lets viewers see their history.
    let has_history_setting = conn
        .prepare("SELECT 1 FROM pragma_table_info('files') WHERE name = 'viewers_see_history'")?
        .exists([])?;
    if !has_history_setting {
        conn.execute_batch(
            "ALTER TABLE files ADD COLUMN viewers_see_history INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    // Versions gained their document's size, so work on one reserves what it takes.
    let has_doc_bytes = conn
        .prepare("SELECT 1 FROM pragma_table_info('versions') WHERE name = 'doc_bytes'")?
        .exists([])?;
    if !has_doc_bytes {
        conn.execute_batch("ALTER TABLE versions ADD COLUMN doc_bytes INTEGER;")?;
    }
    conn.execute_batch(
        "UPDATE sessions SET expires_at = created_at + 2592000000 WHERE expires_at = 0;
         CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions(expires_at);
         CREATE INDEX IF NOT EXISTS sessions_by_account ON sessions(account_id);",
    )?;
    // Server API op ids, by time, to forget expired ones cheaply.
    conn.execute_batch(&super::server::server_ops_index())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_from_before_version_sizes_gains_them() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute_batch("ALTER TABLE versions DROP COLUMN doc_bytes")
            .unwrap();
        assert!(conn.prepare("SELECT doc_bytes FROM versions").is_err());
        migrate(&conn).unwrap();
        migrate(&conn).expect("each step is idempotent");
        assert!(conn.prepare("SELECT doc_bytes FROM versions").is_ok());
    }
}
