//! The NATS backend on a three-server cluster with JetStream, its buckets kept in three
//! copies (`?replicas=3`), as operators run it: the leader of the leases' stream killed, then
//! all three servers killed at once and started again on their stores. Leases stay with their
//! holders or pass on with a higher epoch, never two holders at once, and the coordinator
//! answers again within seconds.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_coordinator::{
    Coordinator, CoordinatorError, CoordinatorSettings, Lease, NatsCoordinator, NodeId,
};

use crate::support::{member, node};

/// The production lease: a leader election takes a few seconds.
const LEASE: Duration = Duration::from_millis(3_000);
/// How long the cluster may take to answer again after a fault.
const BACK_WITHIN: Duration = Duration::from_secs(20);

fn nats_binary() -> PathBuf {
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.services/bin/nats-server");
    if local.is_file() {
        local
    } else {
        PathBuf::from("nats-server")
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One server of the cluster: its ports and store stay, so it can start again as itself.
struct Server {
    name: String,
    port: u16,
    cluster_port: u16,
    store: PathBuf,
    child: Option<Child>,
}

/// Three nats-servers with JetStream, routed to each other on loopback.
struct Cluster {
    servers: Vec<Server>,
    _dir: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let servers = (0..3)
            .map(|i| Server {
                name: format!("n{i}"),
                port: free_port(),
                cluster_port: free_port(),
                store: dir.path().join(format!("n{i}")),
                child: None,
            })
            .collect();
        let mut c = Self { servers, _dir: dir };
        for i in 0..3 {
            c.start_server(i);
        }
        c
    }

    fn start_server(&mut self, i: usize) {
        let routes: Vec<String> = self
            .servers
            .iter()
            .map(|s| format!("nats://127.0.0.1:{}", s.cluster_port))
            .collect();
        let s = &mut self.servers[i];
        let child = Command::new(nats_binary())
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &s.port.to_string(),
                "-n",
                &s.name,
                "-js",
            ])
            .arg("-sd")
            .arg(&s.store)
            .args(["--cluster_name", "atrium-test"])
            .args(["--cluster", &format!("nats://127.0.0.1:{}", s.cluster_port)])
            .args(["--routes", &routes.join(",")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "start nats-server (run `scripts/services.sh start`, which installs it): {e}"
                )
            });
        s.child = Some(child);
    }

    fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.servers[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Every server, and three copies of each bucket.
    fn url(&self) -> String {
        let hosts: Vec<String> = self
            .servers
            .iter()
            .map(|s| format!("nats://127.0.0.1:{}", s.port))
            .collect();
        format!("{}?replicas=3", hosts.join(","))
    }

    /// The server leading the stream behind a bucket, and how many copies it keeps.
    async fn leader_of(&self, stream: &str) -> Option<(usize, usize)> {
        let s = self.servers.iter().find(|s| s.child.is_some())?;
        let client = async_nats::connect(format!("127.0.0.1:{}", s.port))
            .await
            .ok()?;
        let js = async_nats::jetstream::new(client);
        let mut st = js.get_stream(stream).await.ok()?;
        let info = st.info().await.ok()?;
        let leader = info.cluster.as_ref()?.leader.clone()?;
        let at = self.servers.iter().position(|s| s.name == leader)?;
        Some((at, info.config.num_replicas))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.servers.len() {
            self.kill(i);
        }
    }
}

/// Connects once the cluster has elected its JetStream leader and made the buckets.
async fn connect(url: &str, ns: &str) -> Arc<dyn Coordinator> {
    let start = Instant::now();
    loop {
        match NatsCoordinator::connect(url, ns, CoordinatorSettings::from_lease(LEASE)).await {
            Ok(c) => return Arc::new(c),
            Err(_) if start.elapsed() < BACK_WITHIN => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => panic!("no coordinator on the cluster within {BACK_WITHIN:?}: {e}"),
        }
    }
}

/// Keeps `id` a member as a node's keeper does: heartbeats, and joins again when told its
/// membership lapsed.
fn keep_alive(c: &Arc<dyn Coordinator>, id: &str) -> tokio::task::JoinHandle<()> {
    let (c, id) = (c.clone(), id.to_owned());
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(LEASE / 3).await;
            if let Err(CoordinatorError::Lost) = c.heartbeat(&node(&id), false).await {
                let _ = c.join(member(&id, false)).await;
            }
        }
    })
}

/// Retries `f` until it answers something other than `Unavailable`.
async fn answered<T, F, Fut>(what: &str, mut f: F) -> Result<T, CoordinatorError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, CoordinatorError>>,
{
    let start = Instant::now();
    loop {
        match f().await {
            Err(CoordinatorError::Unavailable(e)) => {
                assert!(
                    start.elapsed() < BACK_WITHIN,
                    "{what}: still unavailable after {BACK_WITHIN:?}: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

/// Retries an acquire by `what` until it answers something other than `Unavailable`, or
/// `Lost` while the asker's own membership has lapsed in the fault (its keeper joins again
/// within a third of a lease, as a node's does).
async fn acquired(
    what: &str,
    c: &Arc<dyn Coordinator>,
    file: &str,
    by: &NodeId,
) -> Result<Lease, CoordinatorError> {
    let start = Instant::now();
    loop {
        match answered(what, || c.acquire(file, by)).await {
            Err(CoordinatorError::Lost) if start.elapsed() < BACK_WITHIN => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

/// After a fault: each of a's files is still a's with its epoch, or a has lost it and b can
/// take it with a higher epoch; never both. Returns how many stayed with a.
async fn one_holder_each(
    a: &Arc<dyn Coordinator>,
    b: &Arc<dyn Coordinator>,
    held: &mut [Lease],
) -> usize {
    let (node_a, node_b) = (node("a"), node("b"));
    let mut kept = 0;
    for lease in held.iter_mut() {
        let renewed = answered("a renews", || a.renew(lease)).await;
        match renewed {
            Ok(l) => {
                assert_eq!(
                    l.epoch, lease.epoch,
                    "a kept {} under another epoch",
                    lease.file
                );
                let other = answered("b asks", || b.acquire(&lease.file, &node_b)).await;
                assert!(
                    matches!(other, Err(CoordinatorError::Held { ref holder }) if *holder == node_a),
                    "{} is a's yet b was answered {other:?}",
                    lease.file
                );
                kept += 1;
            }
            Err(CoordinatorError::Lost) => {
                // a lost it when its own view saw its membership lapse; b's view of a may
                // lag behind and still answer `Held` by a (a no longer writes, so there is
                // one holder or none): b must take it within the same time.
                let start = Instant::now();
                let taken = loop {
                    match acquired("b takes", b, &lease.file, &node_b).await {
                        Err(CoordinatorError::Held { ref holder })
                            if *holder == node_a && start.elapsed() < BACK_WITHIN =>
                        {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        other => break other,
                    }
                }
                .unwrap_or_else(|e| panic!("a lost {} yet b cannot take it: {e:?}", lease.file));
                assert!(
                    taken.epoch > lease.epoch,
                    "{}: epoch went from {} to {}",
                    lease.file,
                    lease.epoch,
                    taken.epoch
                );
                assert_eq!(
                    answered("a renews again", || a.renew(lease))
                        .await
                        .unwrap_err(),
                    CoordinatorError::Lost,
                    "two holders of {}",
                    lease.file
                );
                // Back to a, so the next fault starts from a holding everything.
                answered("b releases", || b.release(&taken)).await.unwrap();
                *lease = acquired("a takes back", a, &lease.file, &node_a)
                    .await
                    .unwrap();
            }
            Err(e) => panic!("renew of {}: {e:?}", lease.file),
        }
    }
    kept
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_server_cluster_loses_its_leader_and_then_everything_and_leases_stay_safe() {
    let mut cluster = Cluster::start();
    let ns = format!("t{:016x}", rand::random::<u64>());
    let url = cluster.url();
    let (a, b) = (connect(&url, &ns).await, connect(&url, &ns).await);
    for (c, id) in [(&a, "a"), (&b, "b")] {
        answered("join", || c.join(member(id, false)))
            .await
            .unwrap();
    }
    let (_ka, _kb) = (keep_alive(&a, "a"), keep_alive(&b, "b"));
    let mut held = Vec::new();
    for i in 0..10 {
        held.push(a.acquire(&format!("file-{i}"), &node("a")).await.unwrap());
    }

    // The leases' stream keeps three copies: its leader goes, a follower takes over.
    let stream = format!("KV_{ns}-leases");
    let (leader, copies) = cluster
        .leader_of(&stream)
        .await
        .expect("the leases stream's leader");
    assert_eq!(copies, 3, "the leases bucket keeps three copies");
    let killed_at = Instant::now();
    cluster.kill(leader);
    let kept = one_holder_each(&a, &b, &mut held).await;
    eprintln!(
        "leader n{leader} killed: {kept} of 10 leases kept by their holder; all answered {:?} after",
        killed_at.elapsed()
    );
    let (new_leader, _) = cluster.leader_of(&stream).await.expect("a new leader");
    assert_ne!(new_leader, leader);
    cluster.start_server(leader);

    // Every server killed at once, then started again on its store.
    for i in 0..3 {
        cluster.kill(i);
    }
    let down_at = Instant::now();
    for i in 0..3 {
        cluster.start_server(i);
    }
    let kept = one_holder_each(&a, &b, &mut held).await;
    eprintln!(
        "all three killed and restarted: {kept} of 10 leases kept; all answered {:?} after",
        down_at.elapsed()
    );
    // And the fleet goes on: a new file, and a release that lets b in at once.
    let (node_a, node_b) = (node("a"), node("b"));
    let fresh = answered("a takes a new file", || a.acquire("file-new", &node_a))
        .await
        .unwrap();
    answered("a releases", || a.release(&fresh)).await.unwrap();
    let by_b = answered("b takes it", || b.acquire("file-new", &node_b))
        .await
        .unwrap();
    assert!(by_b.epoch > fresh.epoch);
}
