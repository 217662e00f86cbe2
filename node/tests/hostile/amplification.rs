//! Amplification: presence, patches and joins never cost more than their sender sent.

use super::*;

/// A viewer's presence with a 900 KB `t` was relayed whole to everyone 20 times a
/// second (the review's 960x). Now `t` is at most 32 characters, a compressed
/// message may inflate at most 16x what the socket sent (plus 64 KiB), and a
/// person's entries are paid from a credit its own messages earn: a big state
/// (a long selection of compressible ids) followed by tiny cursor moves cannot
/// make others receive more than 16 bytes per byte sent, plus a fixed allowance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presence_never_amplifies_what_its_sender_sent() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;

    // The owner watches page p1, reading raw bytes.
    let mut owner = Raw::join(port, &r.id, &Hello::token(&r.owner), "").await;
    owner
        .text(&json!({"type": "presence", "page": "p1"}).to_string())
        .await;
    let watcher = Counter::start(owner);

    // 1. The review's attack: a 900 KB `t`, plain and compressed.
    let huge_t = format!("1{}", "0".repeat(900_000));
    let msg = format!(r#"{{"type":"presence","page":"p1","cursor":[1,2],"t":{huge_t}}}"#);
    let mut plain = Sender::join(port, &r.id, &Hello::key(&r.view_key)).await;
    plain.text(&msg).await;
    let rejected = plain.raw.reject().await;
    assert_eq!(rejected["code"], "invalid", "{rejected}");
    let mut squeezed = Sender::join(port, &r.id, &Hello::key(&r.view_key)).await;
    squeezed.deflated(&msg).await;
    let code = squeezed.raw.close_code(WAIT).await;
    assert_eq!(
        code,
        Some(1009),
        "900 KB from {} bytes must not be inflated",
        squeezed.sent
    );

    // 2. The most a viewer may state: a page, 100 long (and compressible) ids,
    // a camera and a 32-character `t`, then cursor moves only, 60 a second for 3 s.
    let (baseline_bytes, baseline_messages) =
        (watcher.bytes(), watcher.messages.load(Ordering::SeqCst));
    let mut attacker = Sender::join(port, &r.id, &Hello::key(&r.view_key)).await;
    let sel: Vec<String> = (0..100)
        .map(|i| format!("{}{i:02}", "n".repeat(62)))
        .collect();
    let big = json!({"type": "presence", "page": "p1", "sel": sel, "camera": [1.5, 2.5, 3.5],
                     "cursor": [0, 0], "t": 1.2345678901234567e300});
    attacker.deflated(&big.to_string()).await;
    let during = {
        let done = Arc::new(AtomicBool::new(false));
        let flood = {
            let done = done.clone();
            tokio::spawn(async move {
                let start = Instant::now();
                let mut i = 0u64;
                while start.elapsed() < Duration::from_secs(3) {
                    i += 1;
                    attacker
                        .deflated(&json!({"type": "presence", "cursor": [i, i]}).to_string())
                        .await;
                    tokio::time::sleep(Duration::from_millis(16)).await;
                }
                done.store(true, Ordering::SeqCst);
                attacker
            })
        };
        let during = probe.sample_while(&done, 20, 400).await;
        let attacker = flood.await.expect("flood");
        tokio::time::sleep(Duration::from_millis(300)).await;
        (during, attacker)
    };
    let (during, attacker) = during;
    let got = watcher.bytes() - baseline_bytes;
    let messages = watcher.messages.load(Ordering::SeqCst) - baseline_messages;
    let sent = attacker.sent as u64;
    // Each `presences` message adds its own framing (about 40 bytes) around entries.
    let bound = 16 * sent + 16 * 1024 + 64 * messages;
    assert!(
        got <= bound,
        "the owner received {got} bytes in {messages} messages because of a viewer who sent \
         {sent}: more than 16x plus the allowance ({bound})"
    );
    assert!(
        !watcher.entries_of.lock().unwrap().is_empty() || got > 0,
        "the viewer's presence never reached the owner"
    );
    assert!(
        watcher.ended.lock().unwrap().is_none(),
        "the owner was disconnected"
    );
    assert_untouched(&r, &probe, 0, json!({})).await;
    report(
        "presence amplification (900 KB t; 100 long ids then cursor moves)",
        &base,
        &during,
        json!({"attacker_sent_bytes": sent, "owner_received_bytes": got,
               "ratio": (got as f64 / sent as f64 * 100.0).round() / 100.0,
               "huge_t": "reject invalid (plain), close 1009 (compressed)"}),
    );
}

/// Patches and joins, the same way: what everyone else receives because of one
/// socket stays within 16x what it sent plus a fixed allowance, however well its
/// messages compress.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_and_joins_never_amplify_what_their_sender_sent() {
    let _serial = SERIAL.lock().await;
    let r = room(&[]).await;
    let port = r.node.port;
    let owner = Raw::join(port, &r.id, &Hello::token(&r.owner), "").await;
    let watcher = Counter::start(owner);

    // An editor sends well-compressing patches (long runs of one letter) as fast
    // as it can, until the node stops it.
    let mut editor = Sender::join(port, &r.id, &Hello::key(&r.edit_key)).await;
    let before = watcher.bytes();
    for i in 1..=200u64 {
        let text = "x".repeat(16 * 1024);
        let msg = json!({"type": "patch", "id": i, "ops": [put(&format!("n{i}"), json!({"text": text}))]});
        editor.deflated(&msg.to_string()).await;
    }
    let code = editor.raw.close_code(WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = watcher.bytes() - before;
    let sent = editor.sent as u64;
    assert_eq!(
        code,
        Some(1009),
        "inflating past 16x what was sent closes the socket"
    );
    assert!(
        got <= 16 * sent + 64 * 1024 + 200 * 100,
        "patches: {got} bytes relayed for {sent} sent"
    );

    // Joins: each join (and its leave) is news to everyone, and smaller than the
    // upgrade and hello that caused it, whatever the name.
    let before = watcher.bytes();
    let mut sent = 0usize;
    for i in 0..20 {
        let mut hello = Hello::key(&r.view_key);
        hello.name = Some(format!("{}{i}", "名".repeat(63)));
        // Without deflate: the welcome carries the editor's large nodes.
        let s = Sender::join_with(port, &r.id, &hello, "").await;
        sent += s.sent;
        drop(s);
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    let got = (watcher.bytes() - before) as usize;
    assert!(
        got <= 2 * sent,
        "joins: {got} bytes sent to others for {sent} sent"
    );
    figure(
        json!({"case": "patch and join amplification", "patch_close": code,
               "joins_sent": sent, "joins_relayed": got}),
    );
    assert!(
        watcher.ended.lock().unwrap().is_none(),
        "the owner was disconnected"
    );
}

/// Numbers in exponent form are written out longer (`1e15` becomes
/// `1000000000000000.0`, 4 bytes to 18): such a patch is refused, so the relay
/// everyone else would get is never larger than what its sender sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_cannot_grow_when_written_out() {
    let _serial = SERIAL.lock().await;
    let r = room(&[]).await;
    let mut probe = Probe::join(&r).await;
    let base = probe.sample(30).await;
    let (mut editor, _) = Client::join(&r.node, &r.id, &Hello::key(&r.edit_key)).await;
    let numbers = vec!["1e15"; 20_000].join(",");
    let text = format!(
        r#"{{"type":"patch","id":1,"ops":[{{"op":"put","id":"n","props":{{"x":[{numbers}]}}}}]}}"#
    );
    editor.send_text(text.clone()).await;
    let reject = editor.await_reject(json!(1)).await;
    let during = probe.sample(30).await;
    report(
        "a patch of numbers in exponent form",
        &base,
        &during,
        json!({"sent_bytes": text.len(), "would_relay_bytes": text.len() + 20_000 * 14,
               "answer": reject["code"]}),
    );
    assert_eq!(reject["code"], "too-large", "{reject}");
    // The same numbers written plainly pass, and are relayed at their own size.
    let plain = vec!["1000000000000000"; 2_000].join(",");
    let x: Value = serde_json::from_str(&format!("[{plain}]")).unwrap();
    editor
        .patch_acked(2, vec![put("n", json!({ "x": x }))])
        .await;
    editor.close().await;
    assert_untouched(
        &r,
        &probe,
        1,
        json!({"n": {"x": vec![1_000_000_000_000_000u64; 2_000]}}),
    )
    .await;
}

/// A reject answers its sender only, but it is still bytes the node holds and sends because
/// of what one socket sent: it never repeats what it was sent at length. A field name of DEL
/// bytes (legal raw in a JSON string) was repeated escaped, seven bytes for each one sent:
/// before hello, with no key, 16 messages of 16 KiB each were 1.8 MiB waiting for the socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reject_never_repeats_what_it_was_sent() {
    let _serial = SERIAL.lock().await;
    let r = room(&[]).await;
    let port = r.node.port;
    let odd = |len: usize| "\u{7f}".repeat(len);
    let patch = |name: &str| {
        format!(
            r#"{{"type":"patch","id":1,"ops":[{{"op":"put","id":"a","props":{{}},"{name}":0}}]}}"#
        )
    };
    let prop = |name: &str| {
        let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
        format!(
            r#"{{"type":"patch","id":1,"ops":[{{"op":"put","id":"a","props":{{"{name}":{deep}}}}}]}}"#
        )
    };
    // Before hello, nobody needs a key.
    let mut stranger = Raw::connect(port, &r.id, "", None).await;
    let sent = patch(&odd(15 * 1024));
    stranger.text(&sent).await;
    let m = stranger.reject().await;
    let answer = m.to_string().len();
    assert!(
        answer < 300,
        "a reject of {answer} bytes for {} sent: {m}",
        sent.len()
    );
    // An editor's patch: the same, and a nested prop's name too.
    let mut editor = Raw::join(port, &r.id, &Hello::key(&r.edit_key), "").await;
    let mut largest = 0;
    for sent in [
        patch(&odd(200 * 1024)),
        prop(&odd(64)),
        patch(&"k".repeat(40)),
    ] {
        editor.text(&sent).await;
        let m = editor.reject().await;
        assert_eq!(m["code"], "invalid", "{m}");
        largest = largest.max(m.to_string().len());
    }
    assert!(largest < 300, "a reject of {largest} bytes");
    // A short plain name is still shown, to help whoever wrote the client.
    editor.text(&patch("colour")).await;
    let m = editor.reject().await;
    assert!(s(&m["message"]).contains("\"colour\""), "{m}");
    figure(
        json!({"case": "rejects repeat nothing long", "before_hello_sent": sent.len(),
                  "before_hello_reject": answer, "largest_reject": largest}),
    );
}
