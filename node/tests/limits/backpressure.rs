//! Backpressure: a socket that stops reading is closed without slowing its room.

use super::*;

/// A socket with a small kernel receive buffer, so that a client that stops
/// reading is noticed after little traffic.
async fn connect_small_buffer(node: &Node, file: &str) -> Client {
    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
    sock.set_recv_buffer_size(8192).expect("SO_RCVBUF");
    let stream = tokio::time::timeout(WAIT, sock.connect(([127, 0, 0, 1], node.port).into()))
        .await
        .expect("connect timed out")
        .expect("connect");
    let (ws, _) = tokio::time::timeout(
        WAIT,
        tokio_tungstenite::client_async(
            node.ws_url(file),
            tokio_tungstenite::MaybeTlsStream::Plain(stream),
        ),
    )
    .await
    .expect("upgrade timed out")
    .expect("upgrade");
    Client { ws }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_stops_reading_is_closed_without_slowing_its_room() {
    let (node, f) = node_with_file(&SMALL_SEND_QUEUE).await;
    let (mut w, _) = Client::join(&node, &f.id, &Hello::token(&f.owner)).await;

    // The slow one joins, then is not read again until the end.
    let mut slow = connect_small_buffer(&node, &f.id).await;
    slow.send_json(&Hello::key(&f.view_key).to_json()).await;
    let welcome = slow.recv_json().await;
    assert_eq!(welcome["type"], "welcome");

    // A reader that keeps up, on its own task; it publishes how far it got.
    let (mut fast, _) = Client::join(&node, &f.id, &Hello::key(&f.view_key)).await;
    let progress = Arc::new(AtomicU64::new(0));
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(0u64);
    let reader_progress = progress.clone();
    let reader = tokio::spawn(async move {
        let mut last = 0u64;
        loop {
            let upto = *stop_rx.borrow_and_update();
            if upto > 0 && last >= upto {
                return (fast, last);
            }
            tokio::select! {
                _ = stop_rx.changed() => {}
                m = fast.recv_json_timeout(Duration::from_secs(60)) => {
                    let m = m.expect("the fast reader got nothing for 60 s");
                    assert_eq!(m["type"], "patch", "fast reader: {m}");
                    let v = m["v"].as_u64().expect("v");
                    assert_eq!(v, last + 1, "fast reader: versions gapless");
                    last = v;
                    reader_progress.store(last, Ordering::Relaxed);
                }
            }
        }
    });

    let base = metrics_text(&node).await;
    let overflows0 = counter(&base, "atrium_queue_overflows_total", &[]);
    let closes0 = counter(&base, "atrium_closes_total", &[("code", "4008")]);

    let blob = "x".repeat(20_000);
    let mut op = 0u64;
    let mut seen = (overflows0, closes0);
    let mut closed_at = None;
    let mut batches_after = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while batches_after < 10 {
        assert!(
            Instant::now() < deadline && !reader.is_finished(),
            "after {op} patches of 20 KB, with one socket not reading, \
             (atrium_queue_overflows_total, atrium_closes_total{{code=\"4008\"}}) went from \
             {:?} to {seen:?}; the fast reader is {}",
            (overflows0, closes0),
            if reader.is_finished() {
                "gone"
            } else {
                "alive"
            }
        );
        // Never outrun the reader that keeps up: it must not be the slow one.
        let caught_up = Instant::now() + Duration::from_secs(10);
        while progress.load(Ordering::Relaxed) < op {
            assert!(
                Instant::now() < caught_up && !reader.is_finished(),
                "the reading client is stuck at {} of {op}",
                progress.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let start = Instant::now();
        let first = op + 1;
        // Two at a time: 40 KB, within the reader's 64 KB queue even when
        // both are relayed in the same instant.
        for _ in 0..2 {
            op += 1;
            w.send_patch(op, vec![put("big", json!({"blob": blob, "n": op}))])
                .await;
        }
        for id in first..=op {
            let v = w.await_ack(id).await;
            assert_eq!(v, id, "acks in order");
        }
        let took = start.elapsed();
        // Generous: the point is that the writer is not held up by the slow
        // socket (its queue would have stalled it for good).
        assert!(
            took < Duration::from_secs(5),
            "2 patches took {took:?} to be acked while someone stopped reading"
        );
        if closed_at.is_some() {
            batches_after += 1;
        } else {
            let text = metrics_text(&node).await;
            seen = (
                counter(&text, "atrium_queue_overflows_total", &[]),
                counter(&text, "atrium_closes_total", &[("code", "4008")]),
            );
            if seen.1 > closes0 {
                closed_at = Some(op);
            }
        }
    }
    eprintln!("the slow socket was closed after {closed_at:?} patches of 20 KB");
    let text = metrics_text(&node).await;
    assert!(
        counter(&text, "atrium_queue_overflows_total", &[]) > overflows0,
        "a 4008 close was counted, but no queue overflow"
    );
    stop_tx.send(op).expect("reader alive");
    let (mut fast, last) = tokio::time::timeout(Duration::from_secs(20), reader)
        .await
        .expect("the fast reader fell behind")
        .expect("fast reader task");
    assert_eq!(last, op, "the fast reader got every patch");
    // The reader and the writer are still in; the slow socket is the one gone:
    // reading it now gives what the kernel held, then its end.
    assert_eq!(
        w.patch_acked(op + 1, vec![set("big", json!({"n": 0}))])
            .await,
        op + 1
    );
    let m = fast.recv_json().await;
    assert_eq!(m["v"], op + 1, "{m}");
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match slow.next_event(left).await {
            Event::Json(_) => continue,
            Event::Timeout => panic!("the slow socket is still open 20 s after its 4008"),
            Event::Close(code) => {
                assert_eq!(code, Some(4008), "the slow socket's close code");
                break;
            }
            Event::Ended | Event::Error(_) => break,
        }
    }
}
