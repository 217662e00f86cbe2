//! Welcomes that resume: a hello with `since` gets the patches it missed instead of the
//! document, up to `ATRIUM_ROOM_OPS_BYTES` of them. The fifth review made a file whose
//! document is tiny but whose recent patches are 8 MB, then asked for them again and
//! again (7.9 GB to one address in 15 s), or from a few addresses that never read (the
//! node past its memory budget, refusing everyone).

use super::*;

/// A file of the owner's with a view link, a tiny document and about 7 MB of recent
/// patches after version 1: its id and view key.
async fn long_history(r: &Room) -> (String, String) {
    let file = create_file(&r.node, &r.owner, "Long history", None).await;
    let id = s(&file["id"]).to_string();
    set_link(&r.node, &r.owner, &id, "view").await;
    let (mut owner, _) = Client::join(&r.node, &id, &Hello::token(&r.owner)).await;
    let text = "r".repeat(900_000);
    for n in 1..=8u64 {
        owner
            .patch_acked(
                n,
                vec![json!({"op": "put", "id": "n", "props": {"t": text}})],
            )
            .await;
    }
    owner
        .patch_acked(9, vec![json!({"op": "delete", "id": "n"})])
        .await;
    (id, s(&file["view_key"]).to_string())
}

/// A hello with `since: 1` from `source`: the socket, its hello sent.
async fn resume_from(source: [u8; 4], port: u16, id: &str, key: &str) -> Option<Raw> {
    let mut raw = Raw::try_connect_from(source, port, id, "", Some(4096))
        .await
        .ok()?;
    let mut hello = Hello::key(key);
    hello.since = Some(1);
    raw.text(&hello.to_json().to_string()).await;
    Some(raw)
}

/// One address resumes from version 1 again and again for six seconds, reading each
/// welcome: what it is sent is charged to its share of document bytes like a document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_in_a_loop_is_charged_to_the_address_share() {
    const RATE: f64 = 4e6;
    const BURST: f64 = 16e6;
    let (_serial, r, mut probe, base) = case(&[
        ("ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND", "4000000"),
        ("ATRIUM_DOCUMENT_BURST_BYTES_PER_IP", "16000000"),
    ])
    .await;
    let (id, key) = long_history(&r).await;
    let port = r.node.port;
    let (results, during, secs) = attack(&mut probe, 1, |_, done| {
        let (id, key) = (id.clone(), key.clone());
        tokio::spawn(async move {
            let (mut welcomed, mut bytes, mut refused) = (0usize, 0usize, 0usize);
            while !done.load(Ordering::SeqCst) {
                let Some(mut raw) = resume_from([127, 0, 0, 14], port, &id, &key).await else {
                    continue;
                };
                match raw.next(WAIT).await {
                    Got::Text(w) if w["type"] == "welcome" => {
                        let resume = w["resume"].as_array().expect("a resume, not the document");
                        bytes += resume.iter().map(|m| m.to_string().len()).sum::<usize>();
                        welcomed += 1;
                    }
                    Got::Close(Some(1013)) => refused += 1,
                    other => panic!("a resuming hello got {other:?}"),
                }
            }
            (welcomed, bytes, refused)
        })
    })
    .await;
    let (welcomed, bytes, refused) = results[0];
    // The burst, the rate, and one welcome past them (the last let in while owing nothing).
    let one = bytes as f64 / welcomed.max(1) as f64;
    let share = BURST + RATE * secs + one;
    report(
        "one address resumes 7 MB of recent patches in a loop",
        &base,
        &during,
        json!({"welcomes": welcomed, "mb_sent": (bytes as f64 / 1e6).round(),
               "mb_share": (share / 1e6).round(), "refused_1013": refused}),
    );
    assert!(welcomed > 0, "no resume was welcomed");
    assert!(
        bytes as f64 <= share,
        "{welcomed} resumes, {bytes} bytes in {secs:.1} s: past the share ({share})"
    );
    assert!(refused > 0, "no resuming hello was refused");
    probe.settle().await;
}

/// Six addresses each open four sockets resuming 7 MB and never read (4 KiB receive
/// buffers): what the node promised them stays within a quarter of its memory budget, so
/// an honest person at another address still creates a file and opens a socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_resumes_from_many_addresses_keep_the_node_within_its_budget() {
    const BUDGET_MIB: u64 = 160;
    let budget = format!("{BUDGET_MIB}M");
    let (_serial, r, probe, _base) = case(&[("ATRIUM_MEMORY_BUDGET", budget.as_str())]).await;
    let (id, key) = long_history(&r).await;
    let mut held = Vec::new();
    for a in 0..6u8 {
        for _ in 0..4 {
            if let Some(raw) = resume_from([127, 0, 0, 30 + a], r.node.port, &id, &key).await {
                held.push(raw);
            }
            // Each reservation is in the node's next memory sample before the next ask.
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss = rss_kib(r.node.pid()) / 1024;
    let created = create_file_answer(&r.node, &r.owner, "After", None).await;
    let other = create_file(&r.node, &r.owner, "Other", None).await;
    let joined = Client::try_join(&r.node, s(&other["id"]), &Hello::token(&r.owner)).await;
    figure(json!({
        "case": "24 sockets of 6 addresses resume 7 MB and never read (budget 160 MiB)",
        "rss_mib": rss, "creation": created.status, "honest_join": joined.is_ok(),
    }));
    assert!(
        rss < BUDGET_MIB,
        "RSS {rss} MiB past the budget of {BUDGET_MIB}"
    );
    assert_eq!(created.status, 201, "an honest creation: {}", created.text);
    assert!(
        joined.is_ok(),
        "an honest join was refused: {:?}",
        joined.err()
    );
    drop(held);
    probe.settle().await;
}
