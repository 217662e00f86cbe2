//! A holder killed with `kill -9` or stopped with SIGTERM: its files move on.

use super::*;

crate::both_backends!(kill9_of_a_busy_holder, sigterm_hands_files_over_at_once);

/// An owner's `count` files held by n0, `per_file` guests editing each every
/// `every`, all of them welcomed there: (owner's token, files, the crowd).
async fn busy_on_n0(
    cluster: &Cluster,
    count: usize,
    per_file: usize,
    every: Duration,
) -> (String, Vec<(String, String)>, Crowd) {
    let owner = cluster.account("owner").await;
    let files = cluster.files_owned_by(&owner, "n0", &THREE, count).await;
    let crowd = Crowd::spawn(&cluster.dir, guests(&files, per_file), every);
    crowd.all_welcomed(Duration::from_secs(30)).await;
    crowd.assert_all_on("n0");
    (owner, files, crowd)
}

/// (2) kill -9 of the holder of 20 busy files: the survivors serve every file
/// again, every acked edit is kept, every client converges.
async fn kill9_of_a_busy_holder(backend: Backend) {
    let mut cluster = Cluster::start(backend, 3, LEASE_MS, &[]).await;
    let (owner, files, crowd) = busy_on_n0(&cluster, 20, 3, Duration::from_millis(300)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let killed = Instant::now();
    cluster.kill9("n0");
    crowd
        .all_welcomed_after(killed, Duration::from_secs(LEASE_MS / 1000 + 20))
        .await;
    let firsts = crowd.first_welcome_after(killed);
    assert_eq!(firsts.len(), files.len());
    let served = firsts.values().map(|(t, _)| *t).max().unwrap() - killed;
    let everyone = crowd
        .logs
        .iter()
        .map(|(_, _, w)| {
            w.lock()
                .unwrap()
                .iter()
                .find(|(t, _)| *t > killed)
                .unwrap()
                .0
        })
        .max()
        .unwrap()
        - killed;
    eprintln!(
        "failover ({}): all {} files served again {} ms after kill -9, all {} clients back after {} ms (lease {} ms)",
        backend.name(),
        files.len(),
        ms(served),
        crowd.logs.len(),
        ms(everyone),
        LEASE_MS
    );
    for (file, (_, node)) in &firsts {
        assert_ne!(node, "n0", "{file}");
    }
    assert!(
        served < Duration::from_millis(LEASE_MS + 5000),
        "files took {} ms to be served again",
        ms(served)
    );

    // Keep editing on the new holders for a moment, then check everything.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let mut peers = crowd.finish().await;
    let total_acked: usize = peers.iter().map(|p| p.acked.len()).sum();
    let holders = verify_all(&cluster, &owner, &mut peers).await;
    for (file, holder) in &holders {
        assert_ne!(holder, "n0", "{file}");
    }
    eprintln!(
        "failover ({}): {} acked patches over {} files all present",
        backend.name(),
        total_acked,
        holders.len()
    );
}

/// (3) SIGTERM: the node drains (1012, exit 0) and releases its leases, so
/// successors serve its files soon after its exit, with no lease wait (the lease
/// here is 10 s; a successor within 3 s of the exit cannot have waited for it)
/// and nothing lost.
async fn sigterm_hands_files_over_at_once(backend: Backend) {
    const LONG_LEASE: u64 = 10_000;
    let mut cluster = Cluster::start(backend, 3, LONG_LEASE, &[]).await;
    let (owner, _, crowd) = busy_on_n0(&cluster, 6, 2, Duration::from_millis(150)).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;

    let termed = Instant::now();
    cluster.sigterm("n0");
    let status = cluster.nodes[0]
        .wait_exit(Duration::from_secs(15))
        .await
        .expect("the node did not exit within 15 s of SIGTERM");
    let exited = Instant::now();
    assert!(status.success(), "SIGTERM must end in exit 0, got {status}");
    crowd
        .all_welcomed_after(termed, Duration::from_secs(15))
        .await;
    let firsts = crowd.first_welcome_after(termed);
    let mut worst = Duration::ZERO;
    for (file, (t, node)) in &firsts {
        assert_ne!(node, "n0", "{file}");
        worst = worst.max(t.saturating_duration_since(exited));
    }
    eprintln!(
        "drain ({}): n0 exited {} ms after SIGTERM; every file served again at most {} ms after its exit",
        backend.name(),
        ms(exited - termed),
        ms(worst)
    );
    assert!(
        worst <= Duration::from_millis(3000),
        "a successor took {} ms after the drained node's exit (lease {LONG_LEASE} ms): leases were not released",
        ms(worst)
    );

    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut peers = crowd.finish().await;
    for p in &peers {
        let after = closes_in(p, termed..);
        assert_eq!(
            after.first(),
            Some(&1012),
            "client {} of {}: closes after SIGTERM {after:?}",
            p.label,
            p.file
        );
    }
    verify_all(&cluster, &owner, &mut peers).await;
}
