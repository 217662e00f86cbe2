//! The router's settings: one typed config, every field with a default and an `ATRIUM_*`
//! variable (listed in `docs/router.md` and `docs/operations.md`).

use std::time::Duration;

use clap::Parser;

/// Settings of one `atrium-router` process.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "atrium-router",
    version,
    about = "Atrium's front door: sends every file's requests and sockets to the node that owns it"
)]
pub struct RouterConfig {
    /// Address clients (and load balancers) connect to.
    #[arg(long, env = "ATRIUM_ROUTER_BIND", default_value = "127.0.0.1:8000")]
    pub bind: String,

    /// Address of `/health` and `/metrics` (never forwarded to nodes).
    #[arg(
        long,
        env = "ATRIUM_ROUTER_ADMIN_BIND",
        default_value = "127.0.0.1:8001"
    )]
    pub admin_bind: String,

    /// The fleet's coordinator (`nats://...` or `redis://...`, with `?namespace=`), the same
    /// URL the nodes use.
    #[arg(long, env = "ATRIUM_COORDINATOR", default_value = "memory://")]
    pub coordinator: String,

    /// The fleet's lease time in milliseconds (shared with the nodes).
    #[arg(long, env = "ATRIUM_LEASE_MS", default_value_t = 3_000)]
    pub lease_ms: u64,

    /// Time to wait for a TCP connection to a node.
    #[arg(
        long,
        env = "ATRIUM_ROUTER_CONNECT_TIMEOUT_MS",
        default_value_t = 2_000
    )]
    pub connect_timeout_ms: u64,

    /// Longest wait for a node's answer to a plain HTTP request (between reads).
    #[arg(long, env = "ATRIUM_ROUTER_READ_TIMEOUT_MS", default_value_t = 60_000)]
    pub read_timeout_ms: u64,

    /// Longest a write to a client or node may block on a proxied socket before the socket is
    /// given up (sockets have no read timeout: the nodes ping them).
    #[arg(
        long,
        env = "ATRIUM_ROUTER_SOCKET_WRITE_TIMEOUT_MS",
        default_value_t = 60_000
    )]
    pub socket_write_timeout_ms: u64,

    /// Files whose lease holder the router remembers (least recently used forgotten first).
    #[arg(long, env = "ATRIUM_ROUTER_HOLDERS", default_value_t = 100_000)]
    pub holders: usize,

    /// On SIGTERM: how long proxied sockets stay open before they are closed with 1012.
    #[arg(long, env = "ATRIUM_ROUTER_DRAIN_MS", default_value_t = 5_000)]
    pub drain_ms: u64,

    /// On SIGTERM: the longest the whole shutdown may take (in-flight HTTP included).
    #[arg(long, env = "ATRIUM_ROUTER_SHUTDOWN_MS", default_value_t = 30_000)]
    pub shutdown_ms: u64,

    /// Worker threads of the proxy.
    #[arg(long, env = "ATRIUM_ROUTER_THREADS", default_value_t = 2)]
    pub threads: usize,

    /// Log filter, e.g. `info` or `atrium_router=debug`.
    #[arg(long, env = "ATRIUM_LOG", default_value = "info")]
    pub log: String,
}

impl RouterConfig {
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }

    pub fn drain(&self) -> Duration {
        Duration::from_millis(self.drain_ms)
    }

    pub fn shutdown(&self) -> Duration {
        Duration::from_millis(self.shutdown_ms)
    }

    /// Checks the values that have rules beyond their type.
    pub fn validate(&self) -> Result<(), String> {
        if self.holders == 0 {
            return Err("ATRIUM_ROUTER_HOLDERS must be at least 1".into());
        }
        if self.threads == 0 {
            return Err("ATRIUM_ROUTER_THREADS must be at least 1".into());
        }
        if self.connect_timeout_ms == 0 || self.read_timeout_ms == 0 {
            return Err("router timeouts must be above zero".into());
        }
        if self.shutdown_ms < self.drain_ms {
            return Err(format!(
                "ATRIUM_ROUTER_SHUTDOWN_MS ({}) must be at least ATRIUM_ROUTER_DRAIN_MS ({})",
                self.shutdown_ms, self.drain_ms
            ));
        }
        atrium_coordinator::CoordinatorSettings::from_lease(self.lease())
            .validate()
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let config = RouterConfig::parse_from(["atrium-router"]);
        config.validate().unwrap();
        assert_eq!(config.lease(), atrium_coordinator::DEFAULT_LEASE);
        assert!(config.shutdown() >= config.drain());
    }

    #[test]
    fn shutdown_must_cover_the_drain() {
        let config =
            RouterConfig::parse_from(["atrium-router", "--drain-ms", "10", "--shutdown-ms", "5"]);
        assert!(config.validate().is_err());
    }
}
