//! Reconnect storms and a second socket of the same client.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_storm_replaces_each_socket_with_4010_and_the_node_stays_healthy() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let rss0 = rss_kib(r.node.pid());
    const STORM: usize = 500;

    // The same client (signed in: the account's 10-socket cap applies) in a
    // tight loop: each new socket must replace the last one with 4010.
    let hello = Hello::token(&r.owner);
    let done = Arc::new(AtomicBool::new(false));
    let storm = {
        let (port, file, done) = (r.node.port, r.id.clone(), done.clone());
        tokio::spawn(async move {
            let start = Instant::now();
            let mut old = Raw::join(port, &file, &hello, "").await;
            for i in 0..STORM {
                let new = Raw::join(port, &file, &hello, "").await;
                let code = old.close_code(WAIT).await;
                assert_eq!(code, Some(4010), "reconnect {i}: the older socket's close");
                // Answer the close, as a client does.
                old.send(&client_frame(0x88, &4010u16.to_be_bytes())).await;
                old = new;
            }
            done.store(true, Ordering::SeqCst);
            (start.elapsed(), old)
        })
    };
    // Only samples taken while the storm runs (it lasts about half a second).
    let pause = Duration::from_millis(10);
    let (during, health) = probe.sample_with_health(&r.node, &done, 5, pause).await;
    let (took, mut last) = storm.await.expect("storm");
    // The last socket is in and works.
    last.text(&patch_msg(1, vec![put("storm", json!({"last": true}))]).to_string())
        .await;
    last.expect_ack("the storm's last socket").await;
    // Counts are back: the two bystanders and the last socket.
    wait_metric(&r.node, "atrium_connections", &[], |v| v == 3.0, WAIT).await;
    wait_metric(&r.node, "atrium_people", &[], |v| v == 3.0, WAIT).await;
    let rss1 = rss_kib(r.node.pid());
    // Nobody saw the owner leave or join again during the storm.
    {
        let seen = probe.seen.lock().unwrap();
        assert!(
            seen.leaves.is_empty(),
            "leaves during the storm: {:?}",
            seen.leaves
        );
        // One join: the storm's first socket. Its 500 replacements are not joins.
        assert_eq!(
            seen.joins.len(),
            1,
            "joins during the storm: {:?}",
            seen.joins
        );
    }
    assert_untouched(&r, &probe, 1, json!({"storm": {"last": true}})).await;
    let h99 = percentile(&health, 0.99);
    assert!(
        h99 < Duration::from_secs(2),
        "/health p99 {h99:?} during the storm"
    );
    report(
        &format!("a reconnect storm ({STORM} reconnects of one client)"),
        &base,
        &during,
        json!({"reconnects": STORM, "storm_seconds": took.as_secs_f64(),
               "reconnects_per_second": (STORM as f64 / took.as_secs_f64()).round(),
               "health_p99_ms": ms(h99).round(),
               "rss_before_kib": rss0, "rss_after_kib": rss1,
               "answer": "every older socket closed 4010; no leave or join seen"}),
    );
}

/// A client that reconnects in a loop gets in every time, at the address's pace
/// (`ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND` after a burst of
/// `ATRIUM_WS_UPGRADE_BURST`) instead of as fast as it can; an upgrade whose turn
/// is more than 10 s away is answered 429 `rate-limited` with `Retry-After` at
/// once. Before: 18,048 joins in 12 s from 30 such loops (every attack at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_loop_from_one_address_is_paced_not_refused() {
    let _serial = SERIAL.lock().await;
    const LOOPS: usize = 25;
    let r = room(&[
        ("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND", "20"),
        ("ATRIUM_WS_UPGRADE_BURST", "5"),
    ])
    .await;
    let hello = Hello::key(&r.view_key);
    let started = Instant::now();
    for _ in 0..LOOPS {
        let mut c = Raw::join(r.node.port, &r.id, &hello, "").await;
        c.send(&client_frame(0x88, &1000u16.to_be_bytes())).await;
    }
    let took = started.elapsed();
    // Five at once, then twenty at 20 a second: at least a second in all.
    assert!(
        took >= Duration::from_millis(950),
        "{LOOPS} reconnects took {took:?}: not paced"
    );
    let paced = wait_metric(
        &r.node,
        "atrium_ws_upgrades_paced_total",
        &[],
        |v| v >= (LOOPS - 5 - 1) as f64,
        WAIT,
    )
    .await;

    // One upgrade a second, one at once: of 14 asked together, the first goes
    // ahead, ten wait their turns (1 to 10 s), and the last three are refused now.
    let node = Node::start(&[
        ("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND", "1"),
        ("ATRIUM_WS_UPGRADE_BURST", "1"),
    ])
    .await;
    let owner = new_account(&node, "owner").await;
    let file = create_file(&node, &owner, "Paced", None).await;
    let id = s(&file["id"]).to_string();
    let mut asked = Vec::new();
    for _ in 0..14 {
        let (port, id) = (node.port, id.clone());
        asked.push(tokio::spawn(async move {
            tokio::time::timeout(Duration::from_millis(500), upgrade_answer(port, &id, ""))
                .await
                .ok()
        }));
        // In order: each is handled before the next is sent.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut answers = Vec::new();
    for a in asked {
        answers.push(a.await.expect("upgrade task"));
    }
    let refused: Vec<&String> = answers
        .iter()
        .flatten()
        .filter(|h| h.starts_with("HTTP/1.1 429"))
        .collect();
    let switched = answers
        .iter()
        .flatten()
        .filter(|h| h.starts_with("HTTP/1.1 101"))
        .count();
    assert_eq!((switched, refused.len()), (1, 3), "{answers:?}");
    for head in refused {
        let lower = head.to_ascii_lowercase();
        assert!(
            lower.contains("retry-after:") && head.contains("rate-limited"),
            "{head}"
        );
    }
    let figure = json!({
        "case": "a reconnect loop from one address (20 a second after 5)",
        "reconnects": LOOPS,
        "seconds": (took.as_secs_f64() * 100.0).round() / 100.0,
        "paced": paced,
        "refused_beyond_10_s": 3,
    });
    eprintln!("FIGURE {figure}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_socket_with_the_same_client_id_replaces_the_first_with_4010() {
    let _serial = SERIAL.lock().await;
    let r = room(&[]).await;
    let mut probe = Probe::join(&r).await;
    let base = probe.sample(20).await;
    let hello = Hello::key(&r.edit_key);
    let (mut first, w1) = Client::join(&r.node, &r.id, &hello).await;
    let v_first = first
        .patch_acked(1, vec![put("twin", json!({"n": 1}))])
        .await;
    assert_eq!(v_first, probe.next + 1);
    let joins_before = probe.seen.lock().unwrap().joins.len();
    let (mut second, w2) = Client::join(&r.node, &r.id, &hello).await;
    first.expect_close(4010).await;
    assert_eq!(w1["you"], w2["you"], "the same client is the same person");
    let during = probe.sample(20).await;
    // The second socket carries on, and its op ids continue the first's.
    second
        .send_patch(1, vec![put("twin", json!({"n": 99}))])
        .await;
    assert_eq!(
        second.await_ack(1).await,
        v_first,
        "a resent id is acked with its version"
    );
    assert_eq!(
        second
            .patch_acked(2, vec![set("twin", json!({"n": 2}))])
            .await,
        probe.next + 2
    );
    {
        let seen = probe.seen.lock().unwrap();
        assert_eq!(
            seen.joins.len(),
            joins_before,
            "a replacement is not a join"
        );
        assert!(seen.leaves.is_empty(), "a replacement is not a leave");
    }
    assert_untouched(&r, &probe, 2, json!({"twin": {"n": 2}})).await;
    report(
        "a second socket with the same client id",
        &base,
        &during,
        json!({"answer": "older socket closed 4010; same person id; no leave or join"}),
    );
}
