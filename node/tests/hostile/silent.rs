//! Sockets that never say hello.

use super::*;

/// Opens `n` sockets that never say hello; each returns (close code, time
/// from its upgrade to the close frame).
async fn open_silent(
    port: u16,
    file: &str,
    n: usize,
) -> Vec<tokio::task::JoinHandle<(Option<u16>, Duration)>> {
    let mut handles = Vec::with_capacity(n);
    let gate = Arc::new(tokio::sync::Semaphore::new(200));
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel();
    for _ in 0..n {
        let (file, gate, ready) = (file.to_string(), gate.clone(), ready_tx.clone());
        handles.push(tokio::spawn(async move {
            let permit = gate.acquire_owned().await.expect("gate");
            let mut raw = Raw::connect(port, &file, "", None).await;
            let upgraded = Instant::now();
            drop(permit);
            let _ = ready.send(());
            let code = raw.close_code(Duration::from_secs(60)).await;
            (code, upgraded.elapsed())
        }));
    }
    for _ in 0..n {
        ready_rx
            .recv()
            .await
            .expect("a silent socket failed to upgrade");
    }
    handles
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_that_never_say_hello_are_closed_4000_and_cost_little() {
    let _serial = SERIAL.lock().await;
    let n: usize = std::env::var("ATRIUM_SLOWLORIS_SOCKETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let limit = raise_fd_limit();
    assert!(
        limit as usize > n + 512,
        "needs {} open files, the limit is {limit}",
        n + 512
    );
    const HELLO_MS: u64 = 3000;
    let per_ip = (n + 100).to_string();
    // The sockets stand for many clients: neither their count nor their pace is
    // held to one address's allowance.
    let r = room(&[
        ("ATRIUM_HELLO_TIMEOUT_MS", "3000"),
        ("ATRIUM_WS_PER_IP", &per_ip),
        ("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND", "0"),
    ])
    .await;
    let mut probe = Probe::join(&r).await;
    let base = probe.sample(30).await;
    let pid = r.node.pid();
    let rss0 = rss_kib(pid);

    let mut rounds = Vec::new();
    let mut during = Vec::new();
    let round_count: usize = std::env::var("ATRIUM_SLOWLORIS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(3);
    for round in 0..round_count {
        let opening = Instant::now();
        let handles = open_silent(r.node.port, &r.id, n).await;
        let opened_in = opening.elapsed();
        let rss_open = rss_kib(pid);
        let conns = metric(&metrics_text(&r.node).await, "atrium_connections", &[]);
        // Measure while they are open (the first of them closes HELLO_MS after its upgrade).
        let until = opening + Duration::from_millis(HELLO_MS) - Duration::from_millis(300);
        let mut health = Vec::new();
        while Instant::now() < until || during.len() < 20 * (round + 1) {
            during.push(probe.once().await);
            health.push(health_ok(&r.node).await);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let mut worst = Duration::ZERO;
        for h in handles {
            let (code, took) = h.await.expect("silent socket");
            assert_eq!(code, Some(4000), "a silent socket's close");
            worst = worst.max(took);
        }
        assert!(
            worst <= Duration::from_millis(HELLO_MS + 2000),
            "a silent socket was closed {worst:?} after its upgrade (deadline {HELLO_MS} ms + 2 s)"
        );
        wait_metric(&r.node, "atrium_connections", &[], |v| v <= 2.0, WAIT).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss_after = rss_kib(pid);
        let per_socket = (rss_open.saturating_sub(rss0) * 1024) / n as u64;
        eprintln!(
            "round {round}: {n} silent sockets opened in {opened_in:?} ({conns} counted), RSS {rss0} -> {rss_open} -> {rss_after} KiB, \
             {per_socket} bytes a socket, last closed {worst:?} after its upgrade"
        );
        assert!(
            per_socket < 100 * 1024,
            "{per_socket} bytes of RSS per silent socket (bound 100 KiB)"
        );
        rounds.push((
            rss_open,
            rss_after,
            per_socket,
            worst,
            percentile(&health, 0.99),
        ));
    }
    // No leak: freed socket memory is used again. Resident memory need not go
    // back down when the sockets close (an allocator keeps some of the heap it
    // grew, per thread), and the second round may still grow into another
    // thread's heap; but once every round has had its chance the high-water
    // mark stops rising. A socket's memory leaked would raise it by the whole
    // first round's growth every round.
    let (peak1, after1, per1, worst1, h1) = rounds[0];
    let first_growth = peak1.saturating_sub(rss0);
    let (last_peak, after_last, per_last, worst_last, h_last) = rounds[rounds.len() - 1];
    let earlier_peak = rounds[..rounds.len() - 1]
        .iter()
        .map(|r| r.0)
        .max()
        .unwrap_or(peak1);
    let last_growth = last_peak.saturating_sub(earlier_peak);
    assert!(
        last_growth <= first_growth / 2,
        "RSS grew {first_growth} KiB in the first round and its high-water mark rose \
         {last_growth} KiB more in the last of {} rounds: the memory of closed sockets \
         is not reused",
        rounds.len()
    );
    assert_untouched(&r, &probe, 0, json!({})).await;
    report(
        &format!("{n} sockets that never send hello (in rounds)"),
        &base,
        &during,
        json!({
            "sockets": n, "hello_timeout_ms": HELLO_MS,
            "rounds": rounds.len(),
            "slowest_close_after_upgrade_ms": [ms(worst1).round(), ms(worst_last).round()],
            "rss_kib": {"before": rss0, "open": [peak1, last_peak], "after": [after1, after_last],
                        "growth": [first_growth, last_growth]},
            "rss_bytes_per_socket": [per1, per_last],
            "health_p99_ms": [ms(h1).round(), ms(h_last).round()],
            "answer": "close 4000",
        }),
    );
}
