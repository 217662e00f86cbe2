//! A router run inside the test's process with `atrium_router::run(config, shutdown)`.

use std::time::Duration;

use clap::Parser;
use serde_json::json;

use super::http::try_http;
use super::{free_port, LEASE_MS};

/// A router on its own thread of this process; stopped with [`InsideRouter::stop`].
pub struct InsideRouter {
    pub port: u16,
    pub admin: u16,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<Result<(), String>>,
}

impl InsideRouter {
    /// Starts a router on the coordinator `url` (the suite's lease time, a short drain) and
    /// waits (four lease times at most) until it sees `members` nodes on its ring.
    pub async fn start(url: &str, members: usize) -> InsideRouter {
        Self::start_with(url, members, &[]).await
    }

    /// [`start`](Self::start) with more command-line settings.
    pub async fn start_with(url: &str, members: usize, more: &[&str]) -> InsideRouter {
        let (port, admin) = (free_port(), free_port());
        let settings = [
            "atrium-router".to_string(),
            format!("--bind=127.0.0.1:{port}"),
            format!("--admin-bind=127.0.0.1:{admin}"),
            format!("--coordinator={url}"),
            format!("--lease-ms={LEASE_MS}"),
            "--drain-ms=100".into(),
            "--shutdown-ms=2000".into(),
        ];
        let more = more.iter().map(|s| s.to_string());
        let config = atrium_router::RouterConfig::parse_from(settings.into_iter().chain(more));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let when = atrium_router::When::new(async move {
                let _ = stopped.await;
            });
            atrium_router::run(config, when).map_err(|e| e.to_string())
        });
        let sees_them = || async {
            let health = try_http(admin, "GET", "/health", &[], None).await;
            match health {
                Some(h) if h.status == 200 && h.body()["ring"] == json!(members) => Ok(()),
                _ => Err(()),
            }
        };
        let within = Duration::from_millis(LEASE_MS * 4);
        atrium_testkit::wait::until(within, Duration::from_millis(50), sees_them, |()| {
            format!("the router never saw {members} nodes")
        })
        .await;
        InsideRouter {
            port,
            admin,
            stop,
            thread,
        }
    }

    /// Tells it to stop; what `run` returned, which must come within `within`.
    pub async fn stop(self, within: Duration) -> Result<(), String> {
        let _ = self.stop.send(());
        let joining = tokio::task::spawn_blocking(move || self.thread.join());
        tokio::time::timeout(within, joining)
            .await
            .unwrap_or_else(|_| panic!("run did not return within {within:?} of the stop"))
            .expect("the router's thread is joined")
            .expect("the router's thread does not panic")
    }
}
