//! A log of large patches: the file must still open.

use super::*;

/// An editor (a guest with the edit key) fills the file's log with 1 MB patches. The
/// store keeps `ATRIUM_ROOM_OPS` of them behind each snapshot for resume; a room's load
/// used to read them all and reserve twice their bytes, so once that passed what the
/// memory budget left, the file could never be opened again (1013 at every hello, 503
/// for its document), the owner's own acked edits out of reach. A load now reads only
/// as many of them as the room's recent operations hold (`ATRIUM_ROOM_OPS_BYTES`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_a_log_of_large_patches_still_opens() {
    let _serial = SERIAL.lock().await;
    const PATCHES: u64 = 64;
    let r = room(&[
        ("ATRIUM_MEMORY_BUDGET", "128M"),
        ("ATRIUM_ROOM_IDLE_MS", "500"),
        ("ATRIUM_WS_BYTES_PER_SECOND", "67108864"),
    ])
    .await;
    let (mut owner, _) = Client::join(&r.node, &r.id, &Hello::token(&r.owner)).await;
    owner
        .patch_acked(1, vec![put("owners-work", json!({"title": "important"}))])
        .await;
    owner.close().await;

    let (mut editor, _) = Client::join(&r.node, &r.id, &Hello::key(&r.edit_key)).await;
    let filler = "x".repeat(1_000_000);
    let (mut acked, mut last) = (0, 0);
    for id in 1..=PATCHES {
        editor
            .send_patch(id, vec![put("n", json!({"text": filler, "round": id}))])
            .await;
        let m = editor.recv_json().await;
        match m["type"].as_str() {
            Some("ack") => (acked, last) = (acked + 1, id),
            // At the budget a large patch is refused; the log still grows with the rest.
            Some("reject") => assert_eq!(m["code"], "too-large", "{m}"),
            _ => panic!("expected an ack or a reject, got {m}"),
        }
    }
    editor.close().await;
    assert!(
        acked >= PATCHES / 2,
        "only {acked} of {PATCHES} patches were acked"
    );
    // The room leaves memory once idle and saved.
    wait_metric(
        &r.node,
        "atrium_rooms",
        &[],
        |v| v == 0.0,
        Duration::from_secs(30),
    )
    .await;

    let rss0 = rss_kib(r.node.pid());
    // The owner opens the file as a client does, coming back after a 1013 (try again
    // later: the node may still be giving back the editor's megabytes); what must not
    // happen is that it never opens.
    let started = Instant::now();
    let (owner, welcome) = loop {
        match Client::try_join(&r.node, &r.id, &Hello::token(&r.owner)).await {
            Ok(joined) => break joined,
            Err(refused) => {
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "the owner could not open the file: {refused:?}"
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    };
    let peak = rss_kib(r.node.pid()).max(rss0);
    let doc = &welcome["doc"];
    assert_eq!(doc["owners-work"]["title"], "important", "the owner's edit");
    assert_eq!(
        doc["n"]["round"].as_u64(),
        Some(last),
        "the last acked patch"
    );
    assert_eq!(welcome["version"].as_u64(), Some(1 + acked));
    owner.close().await;
    figure(
        json!({"case": "a log of large patches, then the file opened",
                  "patches_acked": acked, "rss_before_open_mib": rss0 / 1024,
                  "rss_after_open_mib": peak / 1024}),
    );
}
