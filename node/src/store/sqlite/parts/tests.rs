use std::sync::Arc;

use rusqlite::Connection;

use super::{prepare, Stored, PART_BYTES};
use crate::ids::FileId;
use crate::store::conformance::{new_file, record};
use crate::store::sqlite::schema::SCHEMA;
use crate::store::sqlite::writer::Writer;
use crate::store::sqlite::SqliteStore;
use crate::store::{Store, StoreError};

fn parts_in(folder: &std::path::Path) -> i64 {
    Connection::open(folder.join("atrium.sqlite3"))
        .unwrap()
        .query_row("SELECT count(*) FROM document_parts", [], |r| r.get(0))
        .unwrap()
}

/// A journal commit that comes while a large document is being written waits for at most
/// the part under way, not the whole document. (Written in one transaction, a megabyte held
/// every room's commit for 6-14 ms on the 2-vCPU VM, 8 MiB about 42 ms.)
#[test]
fn a_journal_commit_goes_between_the_parts_of_a_large_document() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parts.sqlite3");
    let open = || {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            .unwrap();
        conn
    };
    open().execute_batch(SCHEMA).unwrap();
    open().execute_batch("CREATE TABLE marks (n)").unwrap();
    let writer = Arc::new(Writer::new(open()));
    const PARTS: usize = 256;
    let doc = "d".repeat(PARTS * PART_BYTES);
    let writing = {
        let writer = writer.clone();
        std::thread::spawn(move || match prepare(&writer, &doc).unwrap() {
            Stored::Parts { id, .. } => id,
            Stored::Inline(_) => panic!("a large document was not written in parts"),
        })
    };
    // Journal commits in a loop while the document is written, each noting how many of its
    // bytes were committed when it began to wait and when it got the writer.
    let watch = open();
    let count = |conn: &Connection| -> i64 {
        let sql = "SELECT COALESCE(SUM(octet_length(bytes)), 0) FROM document_parts";
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    };
    let mut seen = Vec::new();
    while !writing.is_finished() {
        let mut waited_at = 0;
        let conn = writer.urgent_noting(|| waited_at = count(&watch));
        conn.execute("INSERT INTO marks VALUES (1)", []).unwrap();
        seen.push((waited_at, count(&conn)));
        drop(conn);
        // As the journal does between turns: the writer's other writes get theirs.
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let id = writing.join().unwrap();
    let waited_longer: Vec<_> = seen
        .iter()
        .filter(|(at, got)| got - at > PART_BYTES as i64)
        .collect();
    assert!(
        waited_longer.is_empty(),
        "commits waited for more than one part: {waited_longer:?}"
    );
    let during = seen
        .iter()
        .filter(|&&(_, n)| n > 0 && (n as usize) < PARTS * PART_BYTES)
        .count();
    assert!(
        during > 0,
        "no commit came while the document was written: {seen:?}"
    );
    let marker = format!("{}{}", super::IN_PARTS, PARTS * PART_BYTES);
    let text = super::read(&writer.ordinary(), marker, Some(id)).unwrap();
    assert_eq!(text.len(), PARTS * PART_BYTES);
}

/// Parts are kept only for the documents rows name: a replaced, refused, not-newer or
/// deleted document leaves none behind, and parts a stopped write left are removed at
/// the next start.
#[tokio::test]
async fn parts_are_kept_only_for_documents_a_row_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    let large = |c: char| c.to_string().repeat(3 * PART_BYTES + 1);
    let (owner, _) = new_file(&store).await;
    let r = record(&owner.id, 1);
    store.create_file(&r, Some(large('a'))).await.unwrap();
    assert_eq!(parts_in(dir.path()), 4);
    // Refused creations (the same id again; the owner at the cap) write no part at all.
    let side = Connection::open(dir.path().join("atrium.sqlite3")).unwrap();
    side.execute_batch(
        "CREATE TABLE written (n INTEGER); INSERT INTO written VALUES (0);
         CREATE TRIGGER count_parts AFTER INSERT ON document_parts
           BEGIN UPDATE written SET n = n + 1; END;",
    )
    .unwrap();
    let again = store.create_file(&r, Some(large('b'))).await;
    assert!(matches!(again, Err(StoreError::Conflict)), "{again:?}");
    let full = store
        .create_file_capped(&record(&owner.id, 1), Some(large('c')), 2)
        .await;
    assert!(matches!(full, Err(StoreError::Full)), "{full:?}");
    let written: i64 = side
        .query_row("SELECT n FROM written", [], |r| r.get(0))
        .unwrap();
    assert_eq!(written, 0, "parts were written for refused creations");
    side.execute_batch("DROP TRIGGER count_parts;").unwrap();
    assert_eq!(parts_in(dir.path()), 4);

    let epoch = store.take_file(&r.id, 0).await.unwrap().epoch;
    store
        .write_snapshot(&r.id, epoch, 2, &large('d'), 0)
        .await
        .unwrap();
    assert_eq!(
        parts_in(dir.path()),
        4,
        "the replaced document's parts were kept"
    );
    store
        .write_snapshot(&r.id, epoch, 1, &large('e'), 0)
        .await
        .unwrap();
    assert_eq!(
        parts_in(dir.path()),
        4,
        "a document not newer kept its parts"
    );
    let fenced = store
        .write_snapshot(&r.id, epoch + 7, 3, &large('f'), 0)
        .await;
    assert!(fenced.is_err());
    assert_eq!(parts_in(dir.path()), 4, "a fenced write kept its parts");
    let gone = store
        .write_snapshot(&FileId::generate(), 0, 3, &large('g'), 0)
        .await;
    assert!(gone.is_err(), "a snapshot of no file was taken");
    assert_eq!(parts_in(dir.path()), 4);
    let (snapshot, _) = store.snapshot_and_tail(&r.id).await.unwrap();
    assert_eq!(snapshot, Some((2, large('d'))));
    store
        .write_snapshot(&r.id, epoch, 3, "{}", 0)
        .await
        .unwrap();
    assert_eq!(parts_in(dir.path()), 0, "a small document still had parts");
    store
        .write_snapshot(&r.id, epoch, 4, &large('h'), 0)
        .await
        .unwrap();
    store.delete_file(&r.id).await.unwrap();
    assert_eq!(parts_in(dir.path()), 0, "a deleted file kept its parts");

    // A write that stopped between its parts and its row.
    {
        let conn = Connection::open(dir.path().join("atrium.sqlite3")).unwrap();
        conn.execute(
            "INSERT INTO document_parts (document, part, bytes) VALUES (99, 0, x'00')",
            [],
        )
        .unwrap();
    }
    let kept = record(&owner.id, 1);
    store.create_file(&kept, Some(large('k'))).await.unwrap();
    assert_eq!(parts_in(dir.path()), 5);
    drop(store);
    let store = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(parts_in(dir.path()), 4, "parts no row names stayed");
    let taken = store.take_file(&kept.id, 0).await.unwrap();
    assert_eq!(taken.snapshot, Some((0, large('k'))));

    // Parts gone from under a row (only another process on the same folder could do it)
    // are an error to the reader, never a shorter document.
    let side = Connection::open(dir.path().join("atrium.sqlite3")).unwrap();
    for part in [3, 1, 0] {
        side.execute("DELETE FROM document_parts WHERE part = ?1", [part])
            .unwrap();
        let read = store.snapshot_and_tail(&kept.id).await;
        assert!(read.is_err(), "part {part} gone: a document was read");
    }
}
