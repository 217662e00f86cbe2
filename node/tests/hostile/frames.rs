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
