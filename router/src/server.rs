//! The router as one pingora server: the proxy, the admin port, the coordinator watch and
//! the drain, made from the settings and run until the shutdown signal.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use atrium_coordinator::CoordinatorSettings;
use pingora::apps::http_app::HttpServer;
use pingora::listeners::ListenerConfig;
use pingora::protocols::l4::stream::L4BufferSettings;
use pingora::server::configuration::ServerConf;
use pingora::server::{RunArgs, Server, ShutdownSignalWatch};
use pingora::services::background::background_service;
use pingora::services::listening::Service;

use crate::admin::Admin;
use crate::config::RouterConfig;
use crate::connections::{Capped, Caps};
use crate::fleet::Fleet;
use crate::metrics::Metrics;
use crate::proxy::{Evictions, Router};
use crate::shutdown::{Drainer, Listening};
use crate::sockets::Tracker;
use crate::watcher::Watcher;

/// Runs a router until `shutdown` says to stop ([`Signals`](crate::shutdown::Signals) in the
/// binary, [`When`](crate::shutdown::When) inside another program), then drains it; returns
/// once it is drained or stopped. Blocks the calling thread: pingora runs runtimes of its own.
pub fn run(
    config: RouterConfig,
    shutdown: Box<dyn ShutdownSignalWatch + Send>,
) -> anyhow::Result<()> {
    config.validate().map_err(anyhow::Error::msg)?;
    let grace = config.stop.shutdown().as_secs() + 2;
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

    crate::heap::give_back_in_the_background();
    let metrics = Arc::new(Metrics::new());
    let fleet = Fleet::new(config.fleet.holders);
    let tracker = Tracker::new(metrics.clone());
    let coordinator = Arc::new(OnceLock::new());

    let watcher = Watcher {
        url: config.fleet.coordinator.clone(),
        settings: CoordinatorSettings::from_lease(config.fleet.lease()),
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
        timeouts: config.timeouts.proxy(config.fleet.lease()),
        evictions: Evictions::new(config.fleet.evict_refused),
    };
    let mut proxy = pingora::proxy::HttpProxy::new(router, server.configuration.clone());
    proxy.handle_init_modules();
    let max_connections = config.connections.max_connections();
    tracing::info!(
        max_connections,
        per_address = ?config.connections.per_address(),
        "connection caps"
    );
    let caps = Caps::new(max_connections, config.connections.per_address());
    // The proxy and the admin port: `run` returns only once neither listens.
    let listening = Listening::new();
    let mut proxy = Service::new(
        "atrium router".into(),
        listening.app(Capped::new(proxy, caps, metrics.clone())),
    );
    // No read buffer of pingora's own on client connections: it kept 64 KiB for every
    // connection, a socket's included, for its whole life (56 → 48 KiB of router an idle
    // socket); heads are read into the request's own buffer.
    let unbuffered = L4BufferSettings::default().read(0);
    proxy.add_listener(ListenerConfig::tcp(config.bind.clone()).l4_buffer(unbuffered));
    server.add_service(proxy);

    let admin = Admin {
        fleet,
        metrics,
        tracker: tracker.clone(),
    };
    let mut admin_service = Service::new(
        "atrium router admin".into(),
        listening.app(HttpServer::new_app(admin)),
    );
    admin_service.add_tcp(&config.admin_bind);
    server.add_service(admin_service);

    server.add_service(background_service(
        "drain",
        Drainer {
            tracker,
            listening,
            drain: config.stop.drain(),
            limit: config.stop.shutdown(),
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
