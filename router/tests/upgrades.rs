//! Socket upgrades through an in-process router to a stand-in node that answers `101` before
//! it has even read the request: the ordering under which pingora 0.9.1 closed a fresh tunnel
//! right after its `101` (third_party/pingora-proxy/PATCHED.md). Every upgrade must stay open
//! and carry bytes both ways.

mod common;

use std::time::{Duration, Instant};

use atrium_coordinator::NodeId;
use atrium_testkit::env::service_env;
use atrium_testkit::fleet::Namespace;
use atrium_testkit::ws;
use common::inside::InsideRouter;
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Upgrades tried; with the bug each one had about even odds of being torn down.
const UPGRADES: usize = 40;

/// How long the in-process router may take to return once told to stop.
const STOP: Duration = Duration::from_secs(10);

/// A stand-in node: writes its `101` as soon as a connection is accepted, then reads the
/// request head and echoes every byte after it.
async fn eager_node() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(rest) = answer_at_once(&mut tcp).await else {
                    return;
                };
                let (mut r, mut w) = tcp.into_split();
                if w.write_all(&rest).await.is_ok() {
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                }
            });
        }
    });
    port
}

/// Answers an upgrade with `101` before reading it, then reads the request head; what came
/// after the head, or `None` when the connection failed.
async fn answer_at_once(tcp: &mut TcpStream) -> Option<Vec<u8>> {
    let head = "HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\n\
                upgrade: websocket\r\n\r\n";
    tcp.write_all(head.as_bytes()).await.ok()?;
    Some(read_head(tcp).await)
}

/// A coordinator namespace of the test's own on the suite's NATS.
async fn coordinator() -> Namespace {
    let nats = service_env("ATRIUM_TEST_NATS_URL");
    Namespace::create(&nats, "up", Duration::from_millis(LEASE_MS)).await
}

/// Two members announced in a namespace of their own: `alive`, a stand-in node, and `dead`,
/// whose address nothing listens on. Neither heartbeats yet.
async fn alive_and_dead() -> (Namespace, NodeId, NodeId) {
    let alive_port = eager_node().await;
    let coordinator = coordinator().await;
    let (alive, dead) = (
        NodeId::parse("alive").unwrap(),
        NodeId::parse("dead").unwrap(),
    );
    coordinator.announce(&alive, alive_port).await;
    coordinator.announce(&dead, free_port()).await;
    (coordinator, alive, dead)
}

/// A file whose ring owner among `owner` and `other` is `owner`.
fn a_file_of(owner: &NodeId, other: &NodeId) -> String {
    let ring = atrium_coordinator::Ring::new([owner.clone(), other.clone()].iter());
    (0..)
        .map(|i| format!("f{i}"))
        .find(|f| ring.owner(f).as_ref() == Some(owner))
        .unwrap()
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
    let coordinator = coordinator().await;
    let id = NodeId::parse("eager").unwrap();
    coordinator.announce(&id, node).await;
    let heartbeats = coordinator.heartbeat(id);

    let router = InsideRouter::start(&coordinator.url, 1).await;
    let port = router.port;

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
    assert_eq!(router.stop(STOP).await, Ok(()));
    drop(heartbeats);
    assert!(
        torn_down.is_empty(),
        "{} of {UPGRADES} upgrades were closed after their 101: {torn_down:?}",
        torn_down.len()
    );
}

/// With eviction off, a node that died (nothing listens on its address any more) is still a
/// member until its membership lapses: a socket for one of its files waits in the router for
/// that lapse and then goes to the successor, instead of being answered 502 to come back
/// after a backoff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_for_a_dead_members_file_waits_for_the_lapse_and_reaches_the_successor() {
    let _serial = serial().await;
    let (coordinator, alive, dead) = alive_and_dead().await;
    // Only the live one heartbeats: the dead one lapses one lease time after its join.
    let joined = Instant::now();
    let heartbeats = coordinator.heartbeat(alive.clone());
    let router = InsideRouter::start_with(&coordinator.url, 2, &["--evict-refused=false"]).await;
    let port = router.port;
    let file = a_file_of(&dead, &alive);

    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (head, _) = ws::upgrade(&mut tcp, port, &format!("/files/{file}/ws"), "").await;
    let answered = joined.elapsed();
    assert_eq!(router.stop(STOP).await, Ok(()));
    drop(heartbeats);
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

/// A member whose address refuses connections is evicted: the router tries once more, ends
/// its membership, and a socket for one of its files goes to the successor at once. Its
/// heartbeats go on (as a process that still held the membership would send them): without
/// eviction it would never lapse, and the join would be answered 502 after the lapse wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_for_a_member_whose_address_refuses_goes_to_the_successor_at_once() {
    let _serial = serial().await;
    let (coordinator, alive, dead) = alive_and_dead().await;
    let heartbeats = [
        coordinator.heartbeat(alive.clone()),
        coordinator.heartbeat(dead.clone()),
    ];
    let router = InsideRouter::start(&coordinator.url, 2).await;
    let port = router.port;
    let file = a_file_of(&dead, &alive);

    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (head, _) = ws::upgrade(&mut tcp, port, &format!("/files/{file}/ws"), "").await;
    assert!(
        head.starts_with("HTTP/1.1 101"),
        "the join was not carried to the successor: {head}"
    );
    // The router ends the membership before it sends the join on; the test's own view of
    // the members, and the eviction's count, follow a moment later (the view is a watch of
    // the store: it lagged the deletion in one CI run).
    let evicted = "atrium_router_evictions_total{outcome=\"evicted\"} 1";
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let members = coordinator.connection.members().await.unwrap();
        let metrics = common::http::try_http(router.admin, "GET", "/metrics", &[], None)
            .await
            .expect("the router's metrics");
        let gone = members.iter().all(|m| m.id != dead);
        if gone && metrics.text.contains(evicted) {
            break;
        }
        assert!(
            Instant::now() < until,
            "5 s after the join, the refusing member listed: {}, evictions counted: {}",
            !gone,
            metrics.text.contains(evicted)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(heartbeats);
    let beat = coordinator.connection.heartbeat(&dead, false).await;
    assert_eq!(beat, Err(atrium_coordinator::CoordinatorError::Lost));
    assert_eq!(router.stop(STOP).await, Ok(()));
}

/// A stand-in node that, once upgraded, writes `total` bytes to its socket as fast as it will
/// take them and never reads; `written` counts what the socket took.
async fn flooding_node(
    total: usize,
    written: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let written = written.clone();
            tokio::spawn(async move {
                if answer_at_once(&mut tcp).await.is_none() {
                    return;
                }
                let chunk = vec![b'x'; 64 * 1024];
                let mut sent = 0;
                while sent < total {
                    match tcp.write(&chunk).await {
                        Ok(n) if n > 0 => {
                            sent += n;
                            written.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                        }
                        _ => return,
                    }
                }
            });
        }
    });
    port
}

/// A client that never reads, on a node that sends without end: the tunnel holds at most one
/// read of the node's socket (64 KiB) for it and stops reading the node until the client takes
/// it, so the rest waits in the node's own socket, costing the router nothing. Twenty such
/// tunnels each offered 32 MiB grow the router by far less than one of those 32 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_costs_the_router_one_buffer_not_the_stream() {
    const TUNNELS: usize = 20;
    const OFFERED: usize = 32 * 1024 * 1024;
    let _serial = serial().await;
    let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let node = flooding_node(OFFERED, written.clone()).await;
    let coordinator = coordinator().await;
    let id = NodeId::parse("flood").unwrap();
    coordinator.announce(&id, node).await;
    let heartbeats = coordinator.heartbeat(id);
    let router = InsideRouter::start(&coordinator.url, 1).await;
    let port = router.port;

    let before = rss_kib();
    let mut clients = Vec::new();
    for i in 0..TUNNELS {
        let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (head, _) = ws::upgrade(&mut tcp, port, &format!("/files/stuck{i}/ws"), "").await;
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        clients.push(tcp); // kept open, never read
    }
    // Until the node's sockets stop taking bytes: every tunnel is then stuck.
    let mut last = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = written.load(std::sync::atomic::Ordering::Relaxed);
        if now == last {
            break;
        }
        last = now;
    }
    let grown_kib = rss_kib().saturating_sub(before);
    let offered_mib = TUNNELS * OFFERED / (1024 * 1024);
    let held_mib = last as f64 / (1024.0 * 1024.0);
    println!(
        "FIGURE stuck tunnels: {TUNNELS}, offered {offered_mib} MiB, taken by sockets {held_mib:.1} MiB, router grew {grown_kib} KiB"
    );
    assert!(last < TUNNELS * OFFERED, "the node's writes never blocked");
    // 64 KiB a tunnel, with room for the allocator's rounding and the test's own noise.
    assert!(
        grown_kib < (TUNNELS as u64) * 64 * 2 + 8 * 1024,
        "{TUNNELS} stuck tunnels grew the router by {grown_kib} KiB"
    );
    drop(clients);
    assert_eq!(router.stop(STOP).await, Ok(()));
    drop(heartbeats);
}
