//! A socket that never reads.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_never_reads_is_closed_4008_and_others_carry_on() {
    let (_serial, r, mut probe, base) = case(&SMALL_SEND_QUEUE).await;
    let before = metrics_text(&r.node).await;
    let closes0 = metric(&before, "atrium_closes_total", &[("code", "4008")]);
    let overflows0 = metric(&before, "atrium_queue_overflows_total", &[]);

    // The one that never reads: a small kernel buffer, joined, then ignored.
    let mut slow = Raw::connect(r.node.port, &r.id, "", Some(4096)).await;
    slow.text(&Hello::key(&r.view_key).to_json().to_string())
        .await;
    // A writer sends 20 KB patches (the traffic that fills the slow queue).
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (port, file, key, done) = (r.node.port, r.id.clone(), r.edit_key.clone(), done.clone());
        let node_port = r.node.admin_port().expect("admin address");
        tokio::spawn(async move {
            let (mut w, _) = {
                let url = format!("ws://127.0.0.1:{port}/files/{file}/ws");
                let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("writer");
                let mut c = Client { ws };
                c.send_json(&Hello::key(&key).to_json()).await;
                let w = c.recv_json().await;
                (c, w)
            };
            let blob = "x".repeat(20_000);
            let mut op = 0u64;
            let until = Instant::now() + Duration::from_secs(20);
            loop {
                op += 1;
                w.patch_acked(op, vec![put("big", json!({"blob": blob, "n": op}))])
                    .await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                if op.is_multiple_of(10) {
                    let text = raw_http(
                        node_port,
                        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                    )
                    .await;
                    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
                    let closes = metric(body, "atrium_closes_total", &[("code", "4008")]);
                    if closes > closes0 {
                        break;
                    }
                }
                assert!(
                    Instant::now() < until,
                    "no 4008 after {op} patches of 20 KB"
                );
            }
            // A little more traffic after the close: nothing is stuck.
            for _ in 0..10 {
                op += 1;
                w.patch_acked(op, vec![set("big", json!({"n": op}))]).await;
            }
            done.store(true, Ordering::SeqCst);
            op
        })
    };
    let during = probe.sample_while(&done, 30, 1000).await;
    let ops = writer.await.expect("writer");
    let after = metrics_text(&r.node).await;
    let closes = metric(&after, "atrium_closes_total", &[("code", "4008")]);
    let overflows = metric(&after, "atrium_queue_overflows_total", &[]);
    assert_eq!(closes - closes0, 1.0, "exactly one 4008 close");
    assert!(overflows > overflows0, "the overflow was counted");
    // What the slow socket gets when it finally reads: what the kernel held,
    // then its 4008 or the end of the connection.
    let code = loop {
        match slow.next(Duration::from_secs(10)).await {
            Got::Text(_) => continue,
            Got::Close(code) => break code,
            Got::Eof => break None,
            Got::Timeout => panic!("the slow socket is still open"),
            Got::Refused(_) => unreachable!("only an upgrade is refused"),
        }
    };
    assert!(
        code.is_none() || code == Some(4008),
        "slow socket's close: {code:?}"
    );
    let others = probe
        .seen
        .lock()
        .unwrap()
        .patches_by
        .values()
        .sum::<usize>();
    assert_eq!(
        others as u64, ops,
        "the bystander received every one of the writer's patches"
    );
    report(
        "a socket that never reads (send queue 64 frames / 64 KiB)",
        &base,
        &during,
        json!({"writer_patches": ops, "closes_4008": closes - closes0,
               "answer": "close 4008, counted in atrium_closes_total and atrium_queue_overflows_total"}),
    );
}
