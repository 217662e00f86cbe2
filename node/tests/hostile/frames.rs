//! Invalid UTF-8, binary frames, fragments that never end.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_closes_1007_and_binary_frames_close_1003() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;
    let euro = "\u{20ac}".as_bytes();
    let variants: Vec<(&str, Vec<u8>, u16)> = vec![
        ("0xff 0xfe", client_frame(TEXT, b"\xff\xfe"), 1007),
        (
            "an overlong '/' (0xc0 0xaf)",
            client_frame(TEXT, b"{\"type\":\"\xc0\xaf\"}"),
            1007,
        ),
        (
            "a UTF-16 surrogate (0xed 0xa0 0x80)",
            client_frame(TEXT, b"\"\xed\xa0\x80\""),
            1007,
        ),
        (
            "a truncated sequence at the end",
            client_frame(TEXT, b"{}\xe2\x82"),
            1007,
        ),
        (
            "invalid bytes split over fragments",
            [
                client_frame(TEXT_FIRST, b"{\"a\":\"\xe2"),
                client_frame(CONT_LAST, b"\x28\xa1\"}"),
            ]
            .concat(),
            1007,
        ),
        (
            "a binary frame",
            client_frame(BINARY, b"{\"type\":\"patch\"}"),
            1003,
        ),
        ("an empty binary frame", client_frame(BINARY, b""), 1003),
        (
            "a fragmented binary message",
            [client_frame(0x02, b"ab"), client_frame(CONT_LAST, b"cd")].concat(),
            1003,
        ),
    ];
    let variants = Arc::new(variants);
    let done = Arc::new(AtomicBool::new(false));
    let attacker = {
        let (file, key, variants, done) = (
            r.id.clone(),
            r.edit_key.clone(),
            variants.clone(),
            done.clone(),
        );
        tokio::spawn(async move {
            let until = Instant::now() + Duration::from_secs(2);
            let mut n = 0u64;
            while Instant::now() < until {
                for (what, bytes, code) in variants.iter() {
                    // After the hello, and (every other round) before it.
                    let mut raw = if n.is_multiple_of(2) {
                        Raw::join(port, &file, &Hello::key(&key), "").await
                    } else {
                        Raw::connect(port, &file, "", None).await
                    };
                    raw.send(bytes).await;
                    assert_eq!(raw.close_code(WAIT).await, Some(*code), "{what}");
                }
                n += 1;
            }
            done.store(true, Ordering::SeqCst);
            n
        })
    };
    let during = probe.sample_while(&done, 30, 400).await;
    let rounds = attacker.await.expect("attacker");

    // Valid UTF-8 split inside a character across fragments is fine.
    let mut raw = Raw::join(port, &r.id, &Hello::key(&r.edit_key), "").await;
    let text = patch_msg(1, vec![put("euro", json!({"s": "\u{20ac}"}))]).to_string();
    let at = text.find("\u{20ac}").unwrap() + 1;
    raw.send(
        &[
            client_frame(TEXT_FIRST, &text.as_bytes()[..at]),
            client_frame(CONT_LAST, &text.as_bytes()[at..]),
        ]
        .concat(),
    )
    .await;
    raw.expect_ack("a split character was refused").await;
    assert_eq!(euro.len(), 3);
    assert_untouched(&r, &probe, 1, json!({"euro": {"s": "\u{20ac}"}})).await;
    report(
        "invalid UTF-8 and binary frames",
        &base,
        &during,
        json!({"variants": variants.iter().map(|v| v.0).collect::<Vec<_>>(), "rounds": rounds,
               "answer": "close 1007 (invalid UTF-8), 1003 (binary)"}),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fragments_that_never_end_close_1008_within_the_deadline() {
    const DEADLINE_MS: u64 = 1500;
    let (_serial, r, mut probe, base) = case(&[("ATRIUM_HELLO_TIMEOUT_MS", "1500")]).await;
    let port = r.node.port;

    // Three ways of never finishing, side by side, five sockets each.
    let mut tasks = Vec::new();
    for style in ["silent", "trickle", "pings"] {
        for _ in 0..5 {
            let (file, key) = (r.id.clone(), r.edit_key.clone());
            tasks.push(tokio::spawn(async move {
                let mut raw = Raw::join(port, &file, &Hello::key(&key), "").await;
                let start = Instant::now();
                raw.send(&client_frame(TEXT_FIRST, b"{\"type\":\"patch\","))
                    .await;
                let code = match style {
                    "silent" => raw.close_code(Duration::from_secs(10)).await,
                    _ => loop {
                        let f = if style == "trickle" {
                            client_frame(CONT, b" ")
                        } else {
                            client_frame(PING, b"alive")
                        };
                        raw.send(&f).await;
                        match raw.next(Duration::from_millis(100)).await {
                            Got::Timeout | Got::Text(_) => {}
                            Got::Close(code) => break code,
                            Got::Eof | Got::Refused(_) => {
                                panic!("{style}: connection ended without a close frame")
                            }
                        }
                        assert!(
                            start.elapsed() < Duration::from_secs(10),
                            "{style}: never closed"
                        );
                    },
                };
                (style, code, start.elapsed())
            }));
        }
    }
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.expect("fragment task"));
            }
            done.store(true, Ordering::SeqCst);
            out
        })
    };
    let during = probe.sample_while(&done, 20, 400).await;
    let results = watcher.await.expect("watcher");
    let mut slowest = Duration::ZERO;
    for (style, code, took) in &results {
        assert_eq!(*code, Some(1008), "{style}");
        assert!(
            *took >= Duration::from_millis(DEADLINE_MS - 100),
            "{style}: closed after {took:?}, before the {DEADLINE_MS} ms deadline"
        );
        assert!(
            *took <= Duration::from_millis(DEADLINE_MS + 2000),
            "{style}: closed after {took:?}, later than the deadline + 2 s"
        );
        slowest = slowest.max(*took);
    }
    assert_untouched(&r, &probe, 0, json!({})).await;
    report(
        "fragmented messages that never end (silent, trickling continuations, pings)",
        &base,
        &during,
        json!({"sockets": results.len(), "deadline_ms": DEADLINE_MS,
               "slowest_close_ms": ms(slowest).round(), "answer": "close 1008"}),
    );
}

/// Eight sockets of one address, with no hello and no key, send empty pings as fast as
/// they can (the sixth review: 24 million pings in 13 s took both cores and answered
/// 42 MB of pongs): each socket's control frames are read at their pace, 10 a second
/// after 20, so the node answers a few pongs a second and the editors elsewhere are not
/// slowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_flood_is_read_at_its_pace() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;
    let cpu0 = cpu_seconds(r.node.pid());
    let (pongs, during, secs) = attack(&mut probe, 8, |_, done| {
        tokio::spawn(async move {
            let mut raw = Raw::try_connect_from([127, 0, 0, 14], port, "nosuchfile", "", None)
                .await
                .expect("upgraded");
            let pings = client_frame(PING, b"").repeat(8_192);
            let (mut sent, mut pongs) = (0u64, 0u64);
            let mut buf = vec![0u8; 1 << 16];
            while !done.load(Ordering::SeqCst) {
                let write = tokio::time::timeout(Duration::from_millis(50), async {
                    raw.stream.write_all(&pings).await
                });
                if let Ok(Ok(())) = write.await {
                    sent += 8_192;
                }
                // Pongs to an empty ping are two bytes each; count what came.
                while let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_millis(1), raw.stream.read(&mut buf)).await
                {
                    if n == 0 {
                        break;
                    }
                    pongs += buf[..n].windows(2).filter(|w| w == &[0x8a, 0x00]).count() as u64;
                }
            }
            (sent, pongs)
        })
    })
    .await;
    let cpu = cpu_seconds(r.node.pid()) - cpu0;
    let most = pongs.iter().map(|(_, p)| *p).max().unwrap_or(0);
    let sent: u64 = pongs.iter().map(|(s, _)| *s).sum();
    report(
        "a ping flood: 8 sockets of one address, no hello, empty pings as fast as they go",
        &base,
        &during,
        json!({"pings_sent": sent, "most_pongs_one_socket": most, "seconds": secs,
               "node_cores": cpu / secs}),
    );
    // The burst, the pace over the run and its hello deadline's slack.
    let bound = 20.0 + 10.0 * (secs + 1.0);
    assert!(
        (most as f64) <= bound,
        "a socket was answered {most} pongs in {secs:.1} s (its pace allows {bound})"
    );
    probe.settle().await;
}

/// Two addresses hold 100 view-key sockets each, every one sending a message in 60 KB
/// fragments to about 1 MiB and never finishing it (the sixth review: 3 addresses took a
/// node with a 256 MiB budget to 361 MiB, and honest creations got 503). A fragmented
/// message's pieces past 64 KiB wait for the memory budget as one large frame does, and
/// one address's sockets hold at most its share of it (a thirty-second, at least 8 MiB), so
/// the node stays under its budget and the owner, at another address, pastes 300 KB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_messages_stay_within_the_memory_budget() {
    const BUDGET_MIB: u64 = 112;
    let budget = format!("{BUDGET_MIB}M");
    let (_serial, r, mut probe, base) = case(&[("ATRIUM_MEMORY_BUDGET", budget.as_str())]).await;
    let port = r.node.port;
    let rss0 = rss_kib(r.node.pid());
    let piece = vec![b' '; 60_000];
    let first = Arc::new(client_frame(
        TEXT_FIRST,
        &[
            b"{\"type\":\"patch\",\"id\":1,\"ops\":[]".as_slice(),
            &piece,
        ]
        .concat(),
    ));
    let more = Arc::new(client_frame(CONT, &piece));
    let mut sockets = Vec::new();
    for source in [[127, 0, 0, 15], [127, 0, 0, 16]] {
        for _ in 0..100 {
            let upgraded = Raw::try_connect_from(source, port, &r.id, "", None).await;
            let mut raw = upgraded.expect("an upgrade");
            raw.text(&Hello::key(&r.view_key).to_json().to_string())
                .await;
            raw.welcome().await;
            sockets.push(Some(raw));
        }
    }
    let count = sockets.len();
    let sockets = Mutex::new(sockets);
    let peak = Arc::new(AtomicU64::new(rss0));
    // The owner pastes 300 KB into the file two seconds in: a large frame of its own, at
    // another address, which must not wait behind what the two addresses hold.
    let (node_port, owner, file) = (port, r.owner.clone(), r.id.clone());
    let paste = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut raw = Raw::join(node_port, &file, &Hello::token(&owner), "").await;
        let started = Instant::now();
        let ops = json!([{"op": "put", "id": "pasted", "props": {"t": "p".repeat(300_000)}}]);
        raw.text(&json!({"type": "patch", "id": 1, "ops": ops}).to_string())
            .await;
        raw.expect_ack("the owner's paste").await;
        started.elapsed()
    });
    let (sent, during, secs) = attack(&mut probe, count, |k, done| {
        let (first, more, peak) = (first.clone(), more.clone(), peak.clone());
        let mut raw = sockets.lock().unwrap()[k].take().expect("each socket once");
        let pid = r.node.pid();
        tokio::spawn(async move {
            let mut sent = 0usize;
            if write_for_a_while(&mut raw.stream, &first).await {
                sent += 60_000;
            }
            while !done.load(Ordering::SeqCst) {
                if sent < 1_000_000 && write_for_a_while(&mut raw.stream, &more).await {
                    sent += 60_000;
                } else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                if k == 0 {
                    peak.fetch_max(rss_kib(pid), Ordering::SeqCst);
                }
            }
            sent
        })
    })
    .await;
    let peak_mib = peak.load(Ordering::SeqCst) as f64 / 1024.0;
    let held: usize = sent.iter().sum();
    let pasted = paste.await.expect("the owner's paste");
    report(
        "unfinished messages: 200 view-key sockets of two addresses, 60 KB fragments to 1 MiB, never finished",
        &base,
        &during,
        json!({"sent_mb": held / 1_000_000, "seconds": secs, "rss_start_mib": rss0 / 1024,
               "peak_rss_mib": (peak_mib * 10.0).round() / 10.0, "budget_mib": BUDGET_MIB,
               "owner_paste_acked_ms": ms(pasted).round()}),
    );
    assert!(
        peak_mib < BUDGET_MIB as f64,
        "resident memory reached {peak_mib:.1} MiB with a budget of {BUDGET_MIB} MiB"
    );
    probe.settle().await;
}

/// Writes `bytes` unless the node stops reading for 200 ms; whether they went.
async fn write_for_a_while(stream: &mut TcpStream, bytes: &[u8]) -> bool {
    let write = tokio::time::timeout(Duration::from_millis(200), stream.write_all(bytes));
    matches!(write.await, Ok(Ok(())))
}

/// Eight sockets of one address, with no hello and no key, open a message and send empty
/// continuation frames as fast as they can, 10,000 to a write (the sixth review's second
/// reading: 250 million in 12 s took both cores, as pings had): frames of any kind are read
/// at 500 a second after 1,000, so the node spends little on them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_empty_frames_is_read_at_its_pace() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;
    let cpu0 = cpu_seconds(r.node.pid());
    let (sent, during, secs) = attack(&mut probe, 8, |_, done| {
        tokio::spawn(async move {
            let mut sent = 0u64;
            let empties = client_frame(CONT, b"").repeat(10_000);
            while !done.load(Ordering::SeqCst) {
                let Ok(mut raw) =
                    Raw::try_connect_from([127, 0, 0, 19], port, "nosuchfile", "", None).await
                else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                raw.send(&client_frame(TEXT_FIRST, b"")).await;
                while !done.load(Ordering::SeqCst) {
                    let write = tokio::time::timeout(
                        Duration::from_millis(50),
                        raw.stream.write_all(&empties),
                    );
                    match write.await {
                        Ok(Ok(())) => sent += 10_000,
                        Ok(Err(_)) => break, // closed (the fragment deadline): open again
                        Err(_) => {}         // not read: the pace holds it back
                    }
                }
            }
            sent
        })
    })
    .await;
    let cores = (cpu_seconds(r.node.pid()) - cpu0) / secs;
    report(
        "a flood of empty continuation frames: 8 sockets of one address, no hello",
        &base,
        &during,
        json!({"frames_written": sent.iter().sum::<u64>(), "seconds": secs, "node_cores": cores}),
    );
    // Before the pace: both cores (the review); after: a few hundredths.
    assert!(
        cores < 0.8,
        "the node spent {cores:.2} cores reading empty frames"
    );
    probe.settle().await;
}
