//! The welcome comes first.

use super::*;

/// The contract: "The server answers with `welcome`, then streams". While
/// the room has patches waiting to be made durable, a joiner's welcome waits
/// for them, and everything else the room sends the joiner meanwhile (`join`,
/// `presences`, `presence-rate`, rejects) must wait behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_welcome_is_the_first_message() {
    let _serial = SERIAL.lock().await;
    // 101 sockets from one address: raise the per-address cap past them.
    let r = room(&[("ATRIUM_WS_PER_IP", "1000")]).await;
    let mut probe = Probe::join(&r).await;
    // Rounds of 100 joiners while the probe edits, until some joins landed while the
    // room had patches waiting for the store (the node counts those welcomes): a round
    // where none did would check nothing.
    let mut held = Vec::new();
    for round in 1..=5 {
        let done = Arc::new(AtomicBool::new(false));
        let (port, file, key) = (r.node.port, r.id.clone(), r.edit_key.clone());
        let joiners = tokio::spawn(hundred_joiners(port, file, key, done.clone()));
        probe.sample_while(&done, 5, 1000).await;
        let (bad, sockets) = joiners.await.expect("joiners");
        assert!(
            bad.is_empty(),
            "{} of 100 joiners got something before their welcome, e.g. {}",
            bad.len(),
            bad[0]
        );
        held.extend(sockets);
        let text = metrics_text(&r.node).await;
        let waited = metric(&text, "atrium_welcomes_waited_total", &[]);
        eprintln!("round {round}: {waited} welcomes so far waited for patches to be durable");
        if waited > 0.0 {
            return;
        }
        held.clear();
    }
    panic!("in 500 joins, no welcome waited for a patch to be durable: the rule went untested");
}

/// 100 sockets joining by tens; returns what came first for those whose first
/// message was not their welcome, and the sockets (kept open).
async fn hundred_joiners(
    port: u16,
    file: String,
    key: String,
    done: Arc<AtomicBool>,
) -> (Vec<String>, Vec<Raw>) {
    let mut first_not_welcome = Vec::new();
    let mut held = Vec::new();
    for _ in 0..10 {
        let mut batch = Vec::new();
        for _ in 0..10 {
            let (file, key) = (file.clone(), key.clone());
            batch.push(tokio::spawn(async move {
                let mut raw = Raw::connect(port, &file, "", None).await;
                raw.text(&Hello::key(&key).to_json().to_string()).await;
                let first = raw.next(WAIT).await;
                (raw, first)
            }));
        }
        for b in batch {
            let (raw, first) = b.await.expect("joiner");
            match first {
                Got::Text(m) if m["type"] == "welcome" => {}
                other => first_not_welcome.push(format!("{other:?}")),
            }
            held.push(raw);
        }
    }
    done.store(true, Ordering::SeqCst);
    (first_not_welcome, held)
}
