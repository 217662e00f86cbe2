//! Atrium's router: the cluster's front door. It sends each file's requests and sockets to
//! the node that serves the file (its live lease holder, else the ring owner among live
//! nodes), everything else to any live node, and learns the fleet by watching the
//! coordinator, never by asking it per request.
//!
//! Modules:
//! - `config`: [`RouterConfig`], every setting with its `ATRIUM_*` variable;
//! - `route`: what a path asks for (a file, any node, nothing) and the file id rule;
//! - `fleet`: [`Fleet`], live members, the ring and remembered lease holders;
//! - `watcher`: the background service that feeds the fleet from the coordinator;
//! - `proxy`: the pingora [`Router`](proxy::Router): routing, retries, `X-Forwarded-For`;
//! - `sockets`: proxied sockets and in-flight requests, and the 1012 close frame;
//! - `shutdown`: SIGTERM handling (stop accepting, drain, close sockets, exit);
//! - `admin`: `/health` and `/metrics` on the admin port;
//! - `metrics`: the `atrium_router_*` Prometheus metrics.

#![forbid(unsafe_code)]

pub mod admin;
pub mod config;
pub mod fleet;
pub mod metrics;
pub mod proxy;
pub mod route;
pub mod shutdown;
pub mod sockets;
pub mod watcher;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use atrium_coordinator::CoordinatorSettings;
use pingora::apps::http_app::HttpServer;
use pingora::server::configuration::ServerConf;
use pingora::server::{RunArgs, Server, ShutdownSignalWatch};
use pingora::services::background::background_service;
use pingora::services::listening::Service;

pub use config::RouterConfig;
pub use fleet::Fleet;

use crate::admin::Admin;
use crate::metrics::Metrics;
use crate::proxy::{Router, Timeouts};
use crate::shutdown::Drainer;
pub use crate::shutdown::{Signals, When};
use crate::sockets::Tracker;
use crate::watcher::Watcher;

/// Runs a router until `shutdown` says to stop ([`Signals`] in the binary, [`When`] inside
/// another program), then drains it; returns once it is drained or stopped. Blocks the
/// calling thread: pingora runs runtimes of its own.
pub fn run(
    config: RouterConfig,
    shutdown: Box<dyn ShutdownSignalWatch + Send>,
) -> anyhow::Result<()> {
    config.validate().map_err(anyhow::Error::msg)?;
    let grace = config.shutdown().as_secs() + 2;
    let conf = ServerConf {
        threads: config.threads,
        grace_period_seconds: Some(grace),
        graceful_shutdown_timeout_seconds: Some(1),
        pid_file: std::env::temp_dir()
            .join(format!("atrium-router-{}.pid", std::process::id()))
            .to_string_lossy()
            .into_owned(),
        upgrade_sock: std::env::temp_dir()
            .join(format!("atrium-router-{}.sock", std::process::id()))
            .to_string_lossy()
            .into_owned(),
        ..ServerConf::default()
    };
    let mut server = Server::new_with_opt_and_conf(None, conf);
    let (drained_tx, drained_rx) = std::sync::mpsc::channel();
    server.bootstrap();

    let metrics = Arc::new(Metrics::new());
    let fleet = Fleet::new(config.holders);
    let tracker = Tracker::new(metrics.clone());
    let coordinator = Arc::new(OnceLock::new());

    let watcher = Watcher {
        url: config.coordinator.clone(),
        settings: CoordinatorSettings::from_lease(config.lease()),
        fleet: fleet.clone(),
        metrics: metrics.clone(),
        coordinator: coordinator.clone(),
    };
    server.add_service(background_service("coordinator watch", watcher));

    let router = Router {
        fleet: fleet.clone(),
        metrics: metrics.clone(),
        tracker: tracker.clone(),
        coordinator,
        timeouts: Timeouts {
            connect: Duration::from_millis(config.connect_timeout_ms),
            read: Duration::from_millis(config.read_timeout_ms),
            socket_write: Duration::from_millis(config.socket_write_timeout_ms),
            lapse: Duration::from_millis(config.lease_ms) + Duration::from_secs(1),
        },
    };
    let mut proxy = pingora::proxy::http_proxy_service_with_name(
        &server.configuration,
        router,
        "atrium router",
    );
    proxy.add_tcp(&config.bind);
    server.add_service(proxy);

    let admin = Admin {
        fleet,
        metrics,
        tracker: tracker.clone(),
    };
    let mut admin_service = Service::new("atrium router admin".into(), HttpServer::new_app(admin));
    admin_service.add_tcp(&config.admin_bind);
    server.add_service(admin_service);

    server.add_service(background_service(
        "drain",
        Drainer {
            tracker,
            drain: config.drain(),
            limit: config.shutdown(),
            done: std::sync::Mutex::new(drained_tx),
        },
    ));

    tracing::info!(bind = %config.bind, admin = %config.admin_bind, "atrium-router starting");
    println!("listening on http://{}", config.bind);
    println!("admin on http://{}", config.admin_bind);
    let pingora = std::thread::Builder::new()
        .name("atrium-router".into())
        .spawn(move || {
            server.run(RunArgs {
                shutdown_signal: shutdown,
            })
        })?;
    // Done when the drain is (a graceful stop), or when pingora returns by itself (a fast
    // stop). After a drain, pingora's thread sleeps out its grace period on its own.
    loop {
        match drained_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(()) => return Ok(()),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if !pingora.is_finished() => {}
            Err(_) => break,
        }
    }
    pingora
        .join()
        .map_err(|_| anyhow::anyhow!("the router's pingora thread panicked"))
}
