//! Outages of the shared parts under a running three-node cluster, against
//! both coordinators:
//!
//! - the coordinator: a private `nats-server` or `redis-server` (the suite's
//!   shared one cannot be stopped) is killed and started again mid-run;
//! - Postgres: the cluster's own database stops taking connections and its
//!   open ones are terminated, then it is let back.
//!
//! Needs the suite's services (`scripts/services.sh start && source
//! .services/env`); without them these tests fail, never skip.

mod common;

use std::net::TcpListener;
use std::ops::Bound::Excluded;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

crate::both_backends!(
    a_node_started_before_its_coordinator_waits_for_it,
    a_slot_given_back_during_an_outage_is_not_kept,
    coordinator_killed_and_restarted,
    postgres_cut_off_and_restored
);

const LEASE_MS: u64 = 1500;
const THREE: [&str; 3] = ["n0", "n1", "n2"];

/// A coordinator server of our own, on a fixed port so nodes find it again
/// after a restart.
struct PrivateServer {
    backend: Backend,
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl PrivateServer {
    async fn start(backend: Backend) -> PrivateServer {
        // A port found free can be taken by another test's server before ours binds it:
        // then ours exits while the port answers, so it is tried again on another port.
        for _ in 0..5 {
            let port = {
                let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
                l.local_addr().unwrap().port()
            };
            let mut server = PrivateServer {
                backend,
                port,
                dir: tempfile::tempdir().expect("temp dir"),
                child: None,
            };
            server.launch().await;
            if server.running() {
                return server;
            }
        }
        panic!("the private {} server would not start", backend.name());
    }

    /// Whether our server process is still alive (not one that lost its port).
    fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    fn url(&self) -> String {
        format!("{}://127.0.0.1:{}", self.backend.name(), self.port)
    }

    async fn launch(&mut self) {
        let port = self.port.to_string();
        let mut cmd = match self.backend {
            Backend::Nats => {
                let bundled =
                    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.services/bin/nats-server");
                let mut cmd = Command::new(if bundled.exists() {
                    bundled
                } else {
                    PathBuf::from("nats-server")
                });
                cmd.args(["-a", "127.0.0.1", "-p", &port, "-js", "-sd"])
                    .arg(self.dir.path());
                cmd
            }
            Backend::Redis => {
                let mut cmd = Command::new("redis-server");
                cmd.args([
                    "--port",
                    &port,
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .current_dir(self.dir.path());
                cmd
            }
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start a private {} server ({e}); `scripts/services.sh start` installs it",
                self.backend.name()
            )
        });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the private {} server did not open port {}",
                self.backend.name(),
                self.port
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // JetStream comes up just after the port opens.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A node started while its coordinator is down (a NATS cluster electing its leaders, a Redis
/// not up yet: what a fleet on Kubernetes meets at every cold start) waits for it instead of
/// exiting, and joins once it answers.
async fn a_node_started_before_its_coordinator_waits_for_it(backend: Backend) {
    let mut server = PrivateServer::start(backend).await;
    let url = server.url();
    server.kill();
    let started = Instant::now();
    let (cluster, ()) = tokio::join!(Cluster::start_on(&url, 1, LEASE_MS, &[]), async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        server.launch().await;
    });
    // Joined: start_on waited for the node to count itself on its ring.
    let logs = cluster.logs();
    assert!(
        logs.contains("the coordinator cannot take this node yet; trying again"),
        "the node never waited for its coordinator:\n{logs}"
    );
    assert!(started.elapsed() >= Duration::from_secs(2));
    let owner = cluster.account("owner").await;
    let file = create_file(&cluster.nodes[0], &owner, "After the wait", None).await;
    let file = s(&file["id"]).to_string();
    let port = cluster.dir.port_of("n0");
    let (mut c, _) = attempt(port, &file, &Hello::token(&owner), Duration::from_secs(10))
        .await
        .expect("a file opens once the node has joined");
    assert_eq!(
        c.patch_acked(1, vec![put("a", serde_json::json!({}))])
            .await,
        1
    );
}

/// A socket that ends while the coordinator cannot be reached gives its account's slot
/// back once it can: a return that failed must not count for as long as the node stays a
/// member, leaving the person a tab short (here: locked out of a second one).
async fn a_slot_given_back_during_an_outage_is_not_kept(backend: Backend) {
    let mut server = PrivateServer::start(backend).await;
    // A lease long enough that the node stays a member through the outage, so the slots
    // it counted before still count after.
    let lease_ms = 20_000;
    let cap = [("ATRIUM_WS_PER_ACCOUNT", "2")];
    let cluster = Cluster::start_on(&server.url(), 1, lease_ms, &cap).await;
    let owner = cluster.account("tabs").await;
    let file = create_file(&cluster.nodes[0], &owner, "Tabs", None).await;
    let file = s(&file["id"]).to_string();
    let port = cluster.dir.port_of("n0");
    // Each tab is a client of its own (a client's second socket replaces its first).
    let tab = || Hello::token(&owner);
    let (_kept, _) = attempt(port, &file, &tab(), WAIT)
        .await
        .expect("the first tab");
    let (leaving, _) = attempt(port, &file, &tab(), WAIT)
        .await
        .expect("the second tab");
    match attempt(port, &file, &tab(), WAIT).await {
        Err(Refusal::Closed(Some(4029))) => {}
        Err(e) => panic!("a third tab: {e:?}, not 4029"),
        Ok(_) => panic!("a third tab was welcomed with a cap of two"),
    }
    server.kill();
    leaving.close().await;
    // The node's first return fails: its request times out or finds no connection.
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.launch().await;
    let back = Instant::now();
    let _again = loop {
        match attempt(port, &file, &tab(), WAIT).await {
            Ok((c, _)) => break c,
            Err(Refusal::Closed(Some(4029))) if back.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(e) => panic!(
                "the tab closed during the outage still held its slot {} s after the \
                 coordinator was back: {e:?}\n{}",
                back.elapsed().as_secs(),
                cluster.logs()
            ),
        }
    };
    eprintln!(
        "slot returned late ({}): a second tab welcomed {} ms after the coordinator was back",
        backend.name(),
        back.elapsed().as_millis()
    );
}

/// Two files on each node, two editing guests on each.
async fn busy_cluster(cluster: &Cluster, owner: &str) -> (Vec<(String, String)>, Crowd) {
    let mut files = Vec::new();
    for n in THREE {
        files.extend(cluster.files_owned_by(owner, n, &THREE, 2).await);
    }
    let mut peers = Vec::new();
    for (id, key) in &files {
        for _ in 0..2 {
            peers.push(Peer::new(id, Hello::key(key)));
        }
    }
    let crowd = Crowd::spawn(&cluster.dir, peers, Duration::from_millis(200));
    crowd.all_welcomed(Duration::from_secs(30)).await;
    (files, crowd)
}

/// The version `GET /doc` gives on `node` (which holds the file).
async fn version_on(cluster: &Cluster, node: &str, token: &str, file: &str) -> u64 {
    get_doc(cluster.node(node), token, file).await.0
}

/// The coordinator dies mid-run: lease holders keep serving their open files
/// (under their store epochs); no new file is taken; once it is back,
/// everything works again and nothing acked is lost.
async fn coordinator_killed_and_restarted(backend: Backend) {
    let mut server = PrivateServer::start(backend).await;
    let cluster = Cluster::start_on(&server.url(), 3, LEASE_MS, &[]).await;
    let owner = cluster.account("owner").await;
    let (files, crowd) = busy_cluster(&cluster, &owner).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let down = Instant::now();
    server.kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut before = Vec::new();
    for (f, _) in &files {
        let node = ring_owner(&THREE, f);
        before.push(version_on(&cluster, &node, &owner, f).await);
    }
    // A file nobody has open cannot be taken meanwhile.
    let fresh = create_file(&cluster.nodes[0], &owner, "Fresh", None).await;
    let fresh = s(&fresh["id"]).to_string();
    let fresh_port = cluster.dir.port_of(&ring_owner(&THREE, &fresh));
    // Each try is a new client, as before the outage.
    let try_fresh = |within| {
        let (fresh, hello) = (fresh.clone(), Hello::token(&owner));
        async move { attempt(fresh_port, &fresh, &hello, within).await }
    };
    let asked = Instant::now();
    match try_fresh(Duration::from_secs(8)).await {
        Ok((_, w)) => panic!("a file was opened without the coordinator: {w}"),
        Err(e) => eprintln!(
            "coordinator outage ({}): a new file's hello got {e:?} after {} ms",
            backend.name(),
            asked.elapsed().as_millis()
        ),
    }
    // Stay down well past the lease.
    let still = Duration::from_millis(3 * LEASE_MS);
    tokio::time::sleep(still.saturating_sub(down.elapsed())).await;
    for ((f, _), v0) in files.iter().zip(&before) {
        let node = ring_owner(&THREE, f);
        let v1 = version_on(&cluster, &node, &owner, f).await;
        assert!(
            v1 > *v0,
            "{f} on {node} took no patch during the coordinator outage (v{v0} -> v{v1})\n{}",
            cluster.logs()
        );
    }
    let outage = down.elapsed();

    let up = Instant::now();
    server.launch().await;
    // New files can be taken again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut c, _) = loop {
        match try_fresh(Duration::from_secs(3)).await {
            Ok(joined) => break joined,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "no new file could be opened within 20 s of the coordinator's return: {e:?}\n{}",
                    cluster.logs()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    eprintln!(
        "coordinator outage ({}): down {} ms; a new file opened {} ms after the restart",
        backend.name(),
        outage.as_millis(),
        up.elapsed().as_millis()
    );
    assert_eq!(
        c.patch_acked(1, vec![put("a", serde_json::json!({}))])
            .await,
        1
    );
    // Every open file has a live holder again (the other nodes say `moved`).
    for (f, _) in &files {
        let deadline = Instant::now() + Duration::from_secs(15);
        while cluster.holder(&owner, f).await.is_none() {
            assert!(
                Instant::now() < deadline,
                "{f} has no live lease holder 15 s after the coordinator came back\n{}",
                cluster.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let mut peers = crowd.finish().await;
    // The holders served through the outage: no client was closed while it lasted.
    for p in &peers {
        let during = closes_in(p, (Excluded(down), Excluded(up)));
        assert!(
            during.is_empty(),
            "client {} of {} was closed during the coordinator outage: {during:?}",
            p.label,
            p.file
        );
    }
    let after: Vec<u16> = peers
        .iter()
        .flat_map(|p| p.closes.iter().map(|c| c.1))
        .collect();
    eprintln!(
        "coordinator outage ({}): client closes after the restart: {after:?}",
        backend.name()
    );
    verify_all(&cluster, &owner, &mut peers).await;
}

/// The store goes away mid-run: patches wait (a 503 notice), then sockets
/// close with 1013; `/ready` says 503 and `/health` 200; once it is back,
/// clients resume and every acked edit is there.
async fn postgres_cut_off_and_restored(backend: Backend) {
    let cluster = Cluster::start(backend, 3, LEASE_MS, &[]).await;
    let owner = cluster.account("owner").await;
    let (_files, crowd) = busy_cluster(&cluster, &owner).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let cut = Instant::now();
    cluster.db.cut_off().await;
    // Every node turns unready, and stays alive.
    for id in THREE {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ready = get(cluster.node(id), "/ready", None).await;
            if ready.status == 503 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{id}: /ready still {} 10 s into the store outage",
                ready.status
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        get(cluster.node(id), "/health", None)
            .await
            .assert_status(200);
    }
    // Every client hears the 503 notice (after 1 s) and is closed with 1013 (after 5 s).
    crowd
        .until_every_peer(
            Duration::from_secs(20),
            "a 503 notice and a 1013 close",
            |m| {
                m.notices.contains(&503)
                    && m.closes.iter().any(|(t, code)| *t > cut && *code == 1013)
            },
        )
        .await;
    for id in THREE {
        get(cluster.node(id), "/health", None)
            .await
            .assert_status(200);
    }
    let restored = Instant::now();
    cluster.db.restore().await;
    for id in THREE {
        let deadline = Instant::now() + Duration::from_secs(15);
        while get(cluster.node(id), "/ready", None).await.status != 200 {
            assert!(
                Instant::now() < deadline,
                "{id}: not ready 15 s after the store came back"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    eprintln!(
        "store outage ({}): every node ready again {} ms after the store came back",
        backend.name(),
        restored.elapsed().as_millis()
    );
    crowd
        .all_welcomed_after(restored, Duration::from_secs(20))
        .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let mut peers = crowd.finish().await;
    for p in &peers {
        assert!(
            p.notices.contains(&503),
            "client {} of {} got no 503 notice during the store outage (notices {:?})",
            p.label,
            p.file,
            p.notices
        );
        let first = p.closes.iter().find(|(t, _)| *t > cut).map(|c| c.1);
        assert_eq!(
            first,
            Some(1013),
            "client {} of {}: the store outage must close its socket with 1013 (closes {:?})",
            p.label,
            p.file,
            p.closes.iter().map(|c| c.1).collect::<Vec<_>>()
        );
    }
    verify_all(&cluster, &owner, &mut peers).await;
}
