//! Socket upgrades through an in-process router to a stand-in node that answers `101` before
//! it has even read the request: the ordering under which pingora 0.9.1 closed a fresh tunnel
//! right after its `101` (third_party/pingora-proxy/PATCHED.md). Every upgrade must stay open
//! and carry bytes both ways.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_coordinator::{Coordinator, Member, NodeId};
use atrium_testkit::ws;
use clap::Parser;
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Upgrades tried; with the bug each one had about even odds of being torn down.
const UPGRADES: usize = 40;

/// A stand-in node: writes its `101` as soon as a connection is accepted, then reads the
/// request head and echoes every byte after it.
async fn eager_node() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let head = "HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\n\
                            upgrade: websocket\r\n\r\n";
                if tcp.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let rest = read_head(&mut tcp).await;
                let (mut r, mut w) = tcp.into_split();
                if w.write_all(&rest).await.is_ok() {
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                }
            });
        }
    });
    port
}

/// A coordinator namespace of the test's own on the suite's NATS: its URL, the timing and a
/// connection to it.
async fn coordinator() -> (
    String,
    atrium_coordinator::CoordinatorSettings,
    Arc<dyn Coordinator>,
) {
    let url = format!(
        "{}?namespace=up{}",
        service_env("ATRIUM_TEST_NATS_URL").trim_end_matches('/'),
        &secret()[..20]
    );
    let settings =
        atrium_coordinator::CoordinatorSettings::from_lease(Duration::from_millis(LEASE_MS));
    let connection = atrium_coordinator::connect(&url, settings)
        .await
        .expect("the suite's NATS");
    (url, settings, connection)
}

/// Announces a node at `127.0.0.1:port`.
async fn join(coordinator: &Arc<dyn Coordinator>, id: &NodeId, port: u16) {
    let address = format!("127.0.0.1:{port}");
    let member = Member {
        id: id.clone(),
        address,
        draining: false,
    };
    coordinator.join(member).await.unwrap();
}

/// Keeps `id`'s membership alive until the task is aborted.
fn heartbeat(
    coordinator: &Arc<dyn Coordinator>,
    settings: atrium_coordinator::CoordinatorSettings,
    id: NodeId,
) -> tokio::task::JoinHandle<()> {
    let coordinator = coordinator.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(settings.heartbeat).await;
            let _ = coordinator.heartbeat(&id, false).await;
        }
    })
}

/// Reads up to the end of an HTTP head; returns what came after it.
async fn read_head(tcp: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = tcp.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return Vec::new();
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return buf.split_off(at + 4);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_answered_at_once_stays_open_both_ways() {
    let _serial = serial().await;
    let node = eager_node().await;
    let (coordinator_url, settings, coordinator) = coordinator().await;
    let id = NodeId::parse("eager").unwrap();
    join(&coordinator, &id, node).await;
    let heartbeats = heartbeat(&coordinator, settings, id);

    let (port, admin, stop, router) = in_process_router(&coordinator_url, 1).await;

    let mut torn_down = Vec::new();
    for i in 0..UPGRADES {
        let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (head, early) = ws::upgrade(&mut tcp, port, &format!("/files/file{i}/ws"), "").await;
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(
            early.is_empty(),
            "bytes before anything was sent: {early:?}"
        );
        let ping = format!("ping {i}");
        tcp.write_all(ping.as_bytes()).await.unwrap();
        let mut echo = vec![0u8; ping.len()];
        let read = tokio::time::timeout(Duration::from_secs(5), tcp.read_exact(&mut echo)).await;
        match read {
            Ok(Ok(_)) => assert_eq!(echo, ping.as_bytes()),
            Ok(Err(e)) => torn_down.push(format!("upgrade {i}: {e}")),
            Err(_) => torn_down.push(format!("upgrade {i}: no echo within 5 s")),
        }
    }
    let _ = stop.send(());
    heartbeats.abort();
    assert_eq!(router.join().unwrap(), Ok(()));
    let _ = admin;
    assert!(
        torn_down.is_empty(),
        "{} of {UPGRADES} upgrades were closed after their 101: {torn_down:?}",
        torn_down.len()
    );
}

type RouterThread = std::thread::JoinHandle<Result<(), String>>;

/// A router in this process on the coordinator `url`, once it sees `members` nodes on its
/// ring: (port, admin port, its stop, its thread).
async fn in_process_router(
    url: &str,
    members: usize,
) -> (u16, u16, tokio::sync::oneshot::Sender<()>, RouterThread) {
    let (port, admin) = (free_port(), free_port());
    let config = atrium_router::RouterConfig::parse_from([
        "atrium-router".to_string(),
        format!("--bind=127.0.0.1:{port}"),
        format!("--admin-bind=127.0.0.1:{admin}"),
        format!("--coordinator={url}"),
        format!("--lease-ms={LEASE_MS}"),
        "--drain-ms=100".into(),
        "--shutdown-ms=2000".into(),
    ]);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let router = std::thread::spawn(move || {
        let when = atrium_router::When::new(async move {
            let _ = stopped.await;
        });
        atrium_router::run(config, when).map_err(|e| e.to_string())
    });
    let deadline = Instant::now() + Duration::from_millis(LEASE_MS * 4);
    loop {
        let health = try_http(admin, "GET", "/health", &[], None).await;
        if health.is_some_and(|h| h.status == 200 && h.body()["ring"] == json!(members)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the router never saw {members} nodes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (port, admin, stop, router)
}

/// A node that died (nothing listens on its address any more) is still a member until its
/// membership lapses: a socket for one of its files waits in the router for that lapse and
/// then goes to the successor, instead of being answered 502 to come back after a backoff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_for_a_dead_members_file_waits_for_the_lapse_and_reaches_the_successor() {
    let _serial = serial().await;
    let alive_port = eager_node().await;
    let dead_port = free_port();
    let (url, settings, coordinator) = coordinator().await;
    let (alive, dead) = (
        NodeId::parse("alive").unwrap(),
        NodeId::parse("dead").unwrap(),
    );
    join(&coordinator, &alive, alive_port).await;
    join(&coordinator, &dead, dead_port).await;
    // Only the live one heartbeats: the dead one lapses one lease time after its join.
    let joined = Instant::now();
    let heartbeats = heartbeat(&coordinator, settings, alive.clone());
    let (port, _admin, stop, router) = in_process_router(&url, 2).await;
    let ring = atrium_coordinator::Ring::new([alive, dead.clone()].iter());
    let file = (0..)
        .map(|i| format!("f{i}"))
        .find(|f| ring.owner(f) == Some(dead.clone()))
        .unwrap();

    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (head, _) = ws::upgrade(&mut tcp, port, &format!("/files/{file}/ws"), "").await;
    let answered = joined.elapsed();
    let _ = stop.send(());
    heartbeats.abort();
    assert_eq!(router.join().unwrap(), Ok(()));
    assert!(
        head.starts_with("HTTP/1.1 101"),
        "the join was not carried to the successor: {head}"
    );
    // It went out only once the dead node's membership could have lapsed.
    assert!(
        answered >= Duration::from_millis(LEASE_MS),
        "answered after {answered:?}"
    );
    eprintln!(
        "a dead member's file reached the successor {answered:?} after the member's last join"
    );
}
