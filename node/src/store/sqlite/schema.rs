//! The embedded store's schema, and bringing an older store up to date.

use rusqlite::{Connection, Transaction, TransactionBehavior};

pub(super) const SCHEMA: &str = include_str!("schema.sql");

/// Brings a store made by an older node up to date (each step idempotent).
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    // Sessions gained an expiry: older ones get the default lifetime (30 days)
    // from their creation.
    add_column(conn, "sessions", "expires_at", "INTEGER NOT NULL DEFAULT 0")?;
    // Files gained the setting that lets viewers see their history.
    add_column(
        conn,
        "files",
        "viewers_see_history",
        "INTEGER NOT NULL DEFAULT 0",
    )?;
    // Versions gained their document's size, so work on one reserves what it takes.
    add_column(conn, "versions", "doc_bytes", "INTEGER")?;
    conn.execute_batch(
        "UPDATE sessions SET expires_at = created_at + 2592000000 WHERE expires_at = 0;
         CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions(expires_at);
         CREATE INDEX IF NOT EXISTS sessions_by_account ON sessions(account_id);",
    )?;
    // Snapshots gained large documents in parts.
    add_column(conn, "snapshots", "parts", "INTEGER")?;
    // The rows that name parts, for the sweep below (which reads them all at each start).
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS snapshots_by_parts ON snapshots(parts)
         WHERE parts IS NOT NULL;",
    )?;
    super::parts::sweep(conn)?;
    // Server API op ids, by time, to forget expired ones cheaply.
    conn.execute_batch(&super::server::server_ops_index())?;
    for table in ROWID_TABLES {
        give_rowids(conn, table)?;
    }
    Ok(())
}

/// Adds `column` to `table` as `declaration` unless a store made it already.
fn add_column(
    conn: &Connection,
    table: &str,
    column: &str,
    declaration: &str,
) -> rusqlite::Result<()> {
    let has = conn
        .prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?
        .exists([table, column])?;
    if !has {
        conn.execute_batch(&format!(
            "ALTER TABLE {table} ADD COLUMN {column} {declaration};"
        ))?;
    }
    Ok(())
}

/// Tables first made `WITHOUT ROWID`, whose rows can be large: schema.sql says why
/// they have a rowid now.
const ROWID_TABLES: [&str; 2] = ["ops", "versions"];

/// Rebuilds `table` with a rowid when an older node made it without one: its rows are
/// copied, in one transaction, into the table as the schema defines it now (those of
/// files that no longer exist are left behind).
fn give_rowids(conn: &Connection, table: &str) -> rusqlite::Result<()> {
    if !without_rowid(conn, table)? {
        return Ok(());
    }
    let columns = conn
        .prepare("SELECT name FROM pragma_table_info(?1)")?
        .query_map([table], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .join(", ");
    let old = format!("{table}_without_rowid");
    tracing::info!(
        table,
        "giving the table rowids (once: the store was made by an older node)"
    );
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    tx.execute_batch(&format!("ALTER TABLE {table} RENAME TO {old};"))?;
    tx.execute_batch(SCHEMA)?;
    // Rows of files that are gone (only editing the database by hand leaves them) would
    // fail the new table's foreign key, and with it every start: they are left behind.
    let copied = tx.execute(
        &format!(
            "INSERT INTO {table} ({columns}) SELECT {columns} FROM {old}
             WHERE file_id IN (SELECT id FROM files)"
        ),
        [],
    )?;
    let all: usize = tx.query_row(&format!("SELECT count(*) FROM {old}"), [], |row| row.get(0))?;
    if copied < all {
        tracing::warn!(
            table,
            left = all - copied,
            "rows of files that no longer exist were not copied"
        );
    }
    tx.execute_batch(&format!("DROP TABLE {old};"))?;
    tx.commit()
}

/// Whether `table` was made `WITHOUT ROWID`.
fn without_rowid(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
        [table],
        |row| row.get(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store from before documents in parts keeps its snapshots, read as they were, and
    /// gains the column that names parts.
    #[test]
    fn a_store_from_before_parts_keeps_its_snapshots_and_gains_the_column() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE snapshots (file_id TEXT PRIMARY KEY REFERENCES files(id)
                 ON DELETE CASCADE, version INTEGER NOT NULL, doc TEXT NOT NULL);",
        )
        .unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute_batch(
            "INSERT INTO accounts (id, email, email_key, name, password_hash, created_at)
                 VALUES ('a1', 'a@example.com', 'a@example.com', 'A', 'x', 1);
             INSERT INTO files (id, owner, name, link, view_key, edit_key, created_at,
                 updated_at) VALUES ('f1', 'a1', 'File', 'none', 'v', 'e', 1, 1);
             INSERT INTO snapshots VALUES ('f1', 4, '{\"n\":{}}');",
        )
        .unwrap();
        assert!(conn.prepare("SELECT parts FROM snapshots").is_err());
        migrate(&conn).unwrap();
        migrate(&conn).expect("each step is idempotent");
        let file = crate::ids::FileId::parse("f1").unwrap();
        let snapshot = super::super::parts::read_snapshot(&conn, &file).unwrap();
        assert_eq!(snapshot, Some((4, r#"{"n":{}}"#.to_owned())));
    }

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

    /// The op log and the versions as a node before rowids made them, with a row each.
    const WITHOUT_ROWIDS: &str = "
        DROP TABLE ops;
        CREATE TABLE ops (
            file_id TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            version INTEGER NOT NULL, client BLOB NOT NULL, op_id INTEGER NOT NULL,
            by TEXT NOT NULL, ops TEXT NOT NULL, t TEXT,
            PRIMARY KEY (file_id, version)
        ) WITHOUT ROWID;
        DROP TABLE versions;
        CREATE TABLE versions (
            file_id TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
            id INTEGER NOT NULL, version INTEGER NOT NULL, created_at INTEGER NOT NULL,
            kind TEXT NOT NULL, title TEXT, description TEXT, editors TEXT NOT NULL,
            restored_from INTEGER, base BLOB, delta BLOB,
            PRIMARY KEY (file_id, id)
        ) WITHOUT ROWID;
        INSERT INTO accounts (id, email, email_key, name, password_hash, created_at)
            VALUES ('a1', 'a@example.com', 'a@example.com', 'A', 'x', 1);
        INSERT INTO files (id, owner, name, link, view_key, edit_key, created_at, updated_at)
            VALUES ('f1', 'a1', 'File', 'none', 'v', 'e', 1, 1);
        INSERT INTO ops VALUES ('f1', 1, x'01', 7, 'A', '[{\"op\":\"del\",\"id\":\"n\"}]', NULL);
        INSERT INTO versions VALUES ('f1', 1, 1, 5, 'named', 'First', NULL, '[]', NULL, x'aa', NULL);";

    fn without_rowid(conn: &Connection, table: &str) -> bool {
        super::without_rowid(conn, table).unwrap()
    }

    /// The tables whose rows can be large have rowids: without, one file's large patches
    /// cost every other file's appends a read of those patches (schema.sql).
    #[test]
    fn tables_of_large_rows_have_rowids() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        for table in ["ops", "versions", "snapshots", "document_parts"] {
            assert!(!without_rowid(&conn, table), "{table} is WITHOUT ROWID");
        }
    }

    #[test]
    fn a_store_from_before_rowids_keeps_its_log_and_versions_in_tables_with_them() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA foreign_keys = ON;").unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute_batch(WITHOUT_ROWIDS).unwrap();
        // A row of a file that is gone, as editing the database by hand can leave.
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO ops VALUES ('gone', 1, x'03', 1, 'C', '[]', NULL);
             PRAGMA foreign_keys = ON;",
        )
        .unwrap();
        assert!(without_rowid(&conn, "ops") && without_rowid(&conn, "versions"));

        migrate(&conn).unwrap();
        migrate(&conn).expect("each step is idempotent");

        assert!(!without_rowid(&conn, "ops") && !without_rowid(&conn, "versions"));
        let op: (i64, Vec<u8>, i64, String) = conn
            .query_row(
                "SELECT version, client, op_id, ops FROM ops WHERE file_id = 'f1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(op, (1, vec![1], 7, r#"[{"op":"del","id":"n"}]"#.to_owned()));
        let gone: i64 = conn
            .query_row("SELECT count(*) FROM ops WHERE file_id = 'gone'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(gone, 0, "the gone file's row was left behind");
        let version: (String, Option<i64>, Vec<u8>) = conn
            .query_row(
                "SELECT title, doc_bytes, base FROM versions WHERE file_id = 'f1' AND id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(version, ("First".to_owned(), None, vec![0xaa]));
        // The keys still hold, and the rows still go with their file.
        let again = conn.execute(
            "INSERT INTO ops VALUES ('f1', 1, x'02', 1, 'B', '[]', NULL)",
            [],
        );
        assert!(again.is_err(), "a second row for one version was taken");
        conn.execute("DELETE FROM files WHERE id = 'f1'", [])
            .unwrap();
        let left: i64 = conn
            .query_row(
                "SELECT (SELECT count(*) FROM ops) + (SELECT count(*) FROM versions)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0);
        let old: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name LIKE '%without_rowid%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(old, 0, "the old tables are gone");
    }
}
