//! What a socket costs the router process.

use std::time::Duration;

use atrium_testkit::process::rss_kib;
use atrium_testkit::tcp::connect_from;
use atrium_testkit::ws;
use tokio::io::AsyncWriteExt;

use crate::common::*;

/// Idle sockets cost the router little: pingora kept a 64 KiB read buffer on every client
/// connection, a socket's included, for its whole life (the fifteenth review: about 170 KiB of
/// router a socket, 835 MiB for 4,700 sockets). Client connections are now read without one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_cost_the_router_little() {
    const SOCKETS: usize = 300;
    let _serial = serial().await;
    let fleet = fleet(1, 1).await;
    let router = &fleet.routers[0];
    let (port, pid) = (router.port, router.proc.pid());
    let before = rss_kib(pid);
    let mut clients = Vec::new();
    for i in 0..SOCKETS {
        // Six addresses, within each one's sockets at the node.
        let mut tcp = connect_from([127, 0, 0, 30 + (i % 6) as u8], port).await;
        let (head, _) = ws::upgrade(&mut tcp, port, &format!("/files/idle{i}/ws"), "").await;
        assert!(head.starts_with("HTTP/1.1 101"), "socket {i}: {head}");
        // A frame's worth of bytes through, as a hello's.
        let mut frame = vec![0x81, 0x80 | 100, 0, 0, 0, 0];
        frame.extend_from_slice(&[b' '; 100]);
        tcp.write_all(&frame).await.unwrap();
        clients.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_socket = rss_kib(pid).saturating_sub(before) / SOCKETS as u64;
    println!("FIGURE idle sockets through the router: {per_socket} KiB of router a socket");
    assert!(
        per_socket < 96,
        "an idle socket cost the router {per_socket} KiB"
    );
}

/// What a burst of connections made the router hold is given back once they are gone: the
/// allocator kept what 1,000 unfinished heads at once had taken (about 100 MiB after three such
/// waves, with no connection left open).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_connections_is_given_back_once_they_are_gone() {
    const WAVES: usize = 3;
    const CONNECTIONS: usize = 1_000;
    let _serial = serial().await;
    let fleet = fleet(1, 1).await;
    let router = &fleet.routers[0];
    let (port, pid) = (router.port, router.proc.pid());
    let before = rss_kib(pid);
    let mut peak = before;
    for wave in 0..WAVES {
        let mut held = Vec::new();
        for i in 0..CONNECTIONS {
            // Ten addresses, within each one's cap of connections.
            let mut tcp = connect_from([127, 0, 0, 40 + (i % 10) as u8], port).await;
            let head = format!("GET /files/burst{wave}x{i}/ws HTTP/1.1\r\nHost: a\r\nX-Filler: ");
            tcp.write_all(head.as_bytes()).await.unwrap();
            tcp.write_all(&[b'f'; 2_000]).await.unwrap();
            held.push(tcp);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        peak = peak.max(rss_kib(pid));
        drop(held);
    }
    // The router sees every connection close, and gives back what they held.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = rss_kib(pid);
    println!(
        "FIGURE a burst through the router: {} MiB before, {} MiB at the peak, {} MiB after",
        before / 1024,
        peak / 1024,
        after / 1024
    );
    assert!(
        peak > before + 8 * 1024,
        "the burst took too little to measure: {before} → {peak} KiB"
    );
    assert!(
        after < before + 24 * 1024,
        "{WAVES} waves of {CONNECTIONS} connections left the router at {} MiB from {} MiB",
        after / 1024,
        before / 1024
    );
}
