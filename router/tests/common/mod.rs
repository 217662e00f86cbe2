//! Helpers for the router's whole-process tests: a fleet of `atrium-node` processes sharing
//! a Postgres database and a coordinator namespace with `atrium-router` processes in front
//! of them (the test kit's [`Fleet`]), a router run inside the test's process
//! (`inside`), and small HTTP (`http`) and WebSocket (`client`) clients. Every wait has a
//! deadline; a missing service fails the test.

#![allow(dead_code)]

pub mod client;
pub mod http;
pub mod inside;

use std::time::Duration;

pub use atrium_testkit::env::{free_port, secret};
pub use atrium_testkit::fleet::{Binaries, Fleet};

pub const WAIT: Duration = Duration::from_secs(10);
pub const LEASE_MS: u64 = 3_000;
pub const PASSWORD: &str = "correct horse battery staple";

/// Resident memory of this process (a router run `inside` it), in KiB.
pub fn rss_kib() -> u64 {
    atrium_testkit::process::rss_kib(std::process::id() as i32)
}

/// Cluster tests run one at a time: each starts five processes on a small machine.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// `nodes` nodes (`n0`...) and `routers` routers of this crate on the suite's NATS server.
pub async fn fleet(nodes: usize, routers: usize) -> Fleet {
    fleet_on("ATRIUM_TEST_NATS_URL", nodes, routers).await
}

/// Like [`fleet`], on the coordinator server the variable `server_env` names.
pub async fn fleet_on(server_env: &str, nodes: usize, routers: usize) -> Fleet {
    let bins = Binaries {
        node: atrium_testkit::fleet::node_binary(),
        router: env!("CARGO_BIN_EXE_atrium-router").into(),
    };
    Fleet::start(bins, server_env, LEASE_MS, nodes, routers).await
}
