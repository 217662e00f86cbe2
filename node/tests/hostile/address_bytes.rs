//! What the sockets of one address may bring in together.

use super::*;

/// Twenty edit-key sockets of one address send 60 KB patches of arrays of zeros, each
/// refused `invalid` once parsed, as fast as each socket's own byte rate allows (the
/// seventh review: a hundred such sockets made a release node parse 115 MB a second, 1.1
/// cores, and a bystander's relay p99 went from 1.2 to 54 ms). Together they are held to
/// their address's rate: what the node reads of them (one reject a patch) stays within
/// the rate over the attack, the burst, and one step of 16 KiB or one message a socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sockets_of_one_address_share_its_byte_rate() {
    const RATE: u64 = 2 << 20;
    const BURST: u64 = 4 << 20;
    const SOCKETS: usize = 20;
    let (rate, burst) = (RATE.to_string(), BURST.to_string());
    let (_serial, r, mut probe, base) = case(&[
        ("ATRIUM_WS_BYTES_PER_IP_PER_SECOND", rate.as_str()),
        ("ATRIUM_WS_BURST_BYTES_PER_IP", burst.as_str()),
        ("ATRIUM_ROOM_EDITORS", "200"),
    ])
    .await;
    let arrays = vec![format!("[{}0]", "0,".repeat(149)); 200].join(",");
    let patch = format!(r#"{{"type":"patch","id":1,"ops":[{arrays}]}}"#);
    let frame = Arc::new(client_frame(TEXT, patch.as_bytes()));
    let attackers = Raw::edit_keys_from([127, 0, 0, 18], &r, SOCKETS).await;
    let cpu0 = cpu_seconds(r.node.pid());
    let (rejects, during, secs) = attack(&mut probe, SOCKETS, |k, done| {
        let frame = frame.clone();
        let mut raw = attackers.lock().unwrap()[k].take().expect("once");
        tokio::spawn(async move {
            let mut buf = vec![0u8; 1 << 16];
            let mut rejects = 0u64;
            let mut count = |bytes: &[u8]| {
                rejects += bytes.windows(8).filter(|w| w == b"\"reject\"").count() as u64
            };
            while !done.load(Ordering::SeqCst) {
                let _ =
                    tokio::time::timeout(Duration::from_millis(200), raw.stream.write_all(&frame))
                        .await;
                while let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_millis(1), raw.stream.read(&mut buf)).await
                {
                    if n == 0 {
                        break;
                    }
                    count(&buf[..n]);
                }
            }
            rejects
        })
    })
    .await;
    let cpu = cpu_seconds(r.node.pid()) - cpu0;
    let read: u64 = rejects.iter().sum::<u64>() * patch.len() as u64;
    let bound =
        RATE as f64 * secs + BURST as f64 + SOCKETS as f64 * (patch.len() + (16 << 10)) as f64;
    report(
        "20 edit-key sockets of one address send 60 KB patches of arrays, each refused, within their address's byte rate",
        &base,
        &during,
        json!({"read_mb": read as f64 / 1e6, "bound_mb": (bound / 1e4).round() / 100.0,
               "patches": read / patch.len() as u64, "node_cpu_s": (cpu * 100.0).round() / 100.0,
               "seconds": secs}),
    );
    assert!(read > 0, "no patch of theirs was read at all");
    // A quarter over, for the window's ends (the start of each socket's one message past the
    // debt, the answers to what was read just before the stop).
    assert!(
        (read as f64) <= bound * 1.25,
        "the node read {read} bytes of patches from one address in {secs:.1} s (bound {bound:.0})"
    );
    probe.settle().await;
}
