//! Atrium's router: the cluster's front door. It sends each file's requests and sockets to
//! the node that serves the file (its live lease holder, else the ring owner among live
//! nodes), everything else to any live node, and learns the fleet by watching the
//! coordinator, never by asking it per request.
//!
//! Modules:
//! - `config`: [`RouterConfig`], every setting with its `ATRIUM_*` variable;
//! - `server`: [`run`], the pingora server made of the services below;
//! - `route`: what a path asks for (a file, any node, nothing) and the file id rule;
//! - `fleet`: [`Fleet`], live members, the ring and remembered lease holders;
//! - `watcher`: the background service that feeds the fleet from the coordinator;
//! - `proxy`: the pingora [`Router`](proxy::Router): routing, retries, `X-Forwarded-For`;
//! - `connections`: client connections capped in all and per address;
//! - `heads`: client request heads held to 32 KiB and 10 s, and the router's unfinished ones
//!   to 64 MiB;
//! - `sockets`: proxied sockets and in-flight requests, frame boundaries, the 1012 close frame;
//! - `tunnel`: an upgraded socket's bytes carried between client and node, and its drain;
//! - `shutdown`: SIGTERM handling (stop accepting, drain, close sockets, exit);
//! - `admin`: `/health` and `/metrics` on the admin port;
//! - `heap`: memory a burst of connections took, given back once they are gone;
//! - `metrics`: the `atrium_router_*` Prometheus metrics.

#![deny(unsafe_code)]

pub mod admin;
pub mod config;
pub mod connections;
pub mod fleet;
pub mod heads;
mod heap;
pub mod metrics;
pub mod proxy;
pub mod route;
mod server;
pub mod shutdown;
pub mod sockets;
pub mod tunnel;
pub mod watcher;

pub use config::RouterConfig;
pub use fleet::Fleet;
pub use server::run;
pub use shutdown::{Signals, When};
