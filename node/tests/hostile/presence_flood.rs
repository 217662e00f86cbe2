//! A presence flood.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presence_flood_is_dropped_never_closed() {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let dropped0 = metric(
        &metrics_text(&r.node).await,
        "atrium_presence_dropped_total",
        &[],
    );

    // A watcher on the flooder's page counts the presences it is sent.
    let (mut watcher, _) = Client::join(&r.node, &r.id, &Hello::key(&r.view_key)).await;
    watcher.send_presence(json!({"page": "p1"})).await;
    let (mut flooder, fw) = Client::join(&r.node, &r.id, &Hello::key(&r.edit_key)).await;
    let flooder_id = you(&fw);
    let done = Arc::new(AtomicBool::new(false));
    const FLOOD: u64 = 4000;
    let flood = {
        let done = done.clone();
        tokio::spawn(async move {
            let start = Instant::now();
            for i in 0..FLOOD {
                let msg = json!({"type": "presence", "page": "p1", "cursor": [i, i], "t": i});
                flooder
                    .ws
                    .feed(Message::text(msg.to_string()))
                    .await
                    .expect("feed");
                if i % 100 == 99 {
                    flooder.ws.flush().await.expect("flush");
                    // About 2,000 a second, for two seconds.
                    let due = Duration::from_millis(i.div_ceil(2));
                    tokio::time::sleep(due.saturating_sub(start.elapsed())).await;
                }
            }
            flooder.ws.flush().await.expect("flush");
            // Never closed: the socket still edits afterwards.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let v = flooder
                .patch_acked(1, vec![put("flooder", json!({"ok": 1}))])
                .await;
            // Until the patch after them is acked: every presence was read by then (frames
            // are read at their pace, so reading may take longer than sending).
            let took = start.elapsed();
            done.store(true, Ordering::SeqCst);
            (took, v, flooder)
        })
    };
    let count = tokio::spawn(async move {
        let start = Instant::now();
        let mut presences = 0u64;
        let mut latest = None;
        while start.elapsed() < Duration::from_millis(2500) {
            if let Some(m) = watcher
                .recv_type("presences", Duration::from_millis(100))
                .await
            {
                presences += 1;
                for p in m["people"].as_array().expect("people") {
                    if p["id"] == flooder_id {
                        latest = p["t"].as_u64();
                    }
                }
            }
        }
        (presences, start.elapsed(), latest)
    });
    let during = probe.sample_while(&done, 30, 400).await;
    let (took, _v, _flooder) = flood.await.expect("flood");
    let (presences, window, latest) = count.await.expect("watcher");
    let dropped = metric(
        &metrics_text(&r.node).await,
        "atrium_presence_dropped_total",
        &[],
    ) - dropped0;
    let allowed = 80.0 * (took.as_secs_f64() + 1.0) + 80.0;
    assert!(
        dropped >= FLOOD as f64 - allowed,
        "{FLOOD} presences in {took:?}: only {dropped} dropped (at most {allowed} may pass)"
    );
    let per_second = presences as f64 / window.as_secs_f64();
    assert!(
        per_second <= 22.0,
        "the watcher got {presences} presences in {window:?}: more than the 20 Hz tick"
    );
    assert!(
        latest.is_some(),
        "the flooder's cursor never reached the watcher"
    );
    assert_untouched(&r, &probe, 1, json!({"flooder": {"ok": 1}})).await;
    report(
        "a presence flood (4,000 in 2 s from one socket)",
        &base,
        &during,
        json!({"sent": FLOOD, "dropped": dropped, "flood_seconds": took.as_secs_f64(),
               "watcher_presences_per_second": (per_second * 10.0).round() / 10.0,
               "answer": "excess dropped silently, socket open"}),
    );
}
