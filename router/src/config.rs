//! The router's settings: one typed config, every field with a default and an `ATRIUM_*`
//! variable (listed in `docs/router.md` and `docs/operations.md`). Settings that are used
//! together come as a group with its own checks: the fleet, the proxy's timeouts, the stop.

#[cfg(test)]
mod tests;
mod values;

use clap::{Args, Parser};

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

    #[command(flatten)]
    pub fleet: FleetSettings,

    #[command(flatten)]
    pub timeouts: TimeoutSettings,

    #[command(flatten)]
    pub stop: StopSettings,

    #[command(flatten)]
    pub connections: ConnectionSettings,

    /// Worker threads of the proxy.
    #[arg(long, env = "ATRIUM_ROUTER_THREADS", default_value_t = 2)]
    pub threads: usize,

    /// Log filter, e.g. `info` or `atrium_router=debug`.
    #[arg(long, env = "ATRIUM_LOG", default_value = "info")]
    pub log: String,
}

/// The fleet the router routes to, and what it remembers of it.
#[derive(Debug, Clone, Args)]
pub struct FleetSettings {
    /// The fleet's coordinator (`nats://...` or `redis://...`, with `?namespace=`), the same
    /// URL the nodes use.
    #[arg(long, env = "ATRIUM_COORDINATOR", default_value = "memory://")]
    pub coordinator: String,

    /// The fleet's lease time in milliseconds (shared with the nodes).
    #[arg(long, env = "ATRIUM_LEASE_MS", default_value_t = 3_000)]
    pub lease_ms: u64,

    /// Files whose lease holder the router remembers (least recently used forgotten first).
    #[arg(long, env = "ATRIUM_ROUTER_HOLDERS", default_value_t = 100_000)]
    pub holders: usize,

    /// End the membership of a node whose address refuses connections (a second try 100 ms
    /// later refused too): nothing listens there, so its files move to their successors at
    /// once instead of a lease time later.
    #[arg(
        long,
        env = "ATRIUM_ROUTER_EVICT_REFUSED",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub evict_refused: bool,
}

/// How long the proxy waits on a node.
#[derive(Debug, Clone, Args)]
pub struct TimeoutSettings {
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
}

/// What a SIGTERM leaves time for.
#[derive(Debug, Clone, Args)]
pub struct StopSettings {
    /// On SIGTERM: how long proxied sockets stay open before they are closed with 1012.
    #[arg(long, env = "ATRIUM_ROUTER_DRAIN_MS", default_value_t = 5_000)]
    pub drain_ms: u64,

    /// On SIGTERM: the longest the whole shutdown may take (in-flight HTTP included).
    #[arg(long, env = "ATRIUM_ROUTER_SHUTDOWN_MS", default_value_t = 30_000)]
    pub shutdown_ms: u64,
}

/// How many client connections the router holds, in all and per client address.
#[derive(Debug, Clone, Args)]
pub struct ConnectionSettings {
    /// Most client connections open at once (each may hold one to a node as well). Default:
    /// a quarter of the open-file limit less 256 (a socket holds four descriptors); more are
    /// answered 503 and closed.
    #[arg(long, env = "ATRIUM_ROUTER_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// Most client connections open at once from one address (an IPv6 client by its /64);
    /// more are answered 429 and closed. `0` turns the cap off.
    #[arg(long, env = "ATRIUM_ROUTER_CONNECTIONS_PER_IP", default_value_t = 256)]
    pub connections_per_ip: usize,
}
