//! The router in front of a real fleet: three `atrium-node`s sharing Postgres and a NATS
//! coordinator, two `atrium-router`s. Needs `scripts/services.sh start && source .services/env`.
//! One module a behaviour: sockets and REST meeting on one node (`meeting`) and the
//! router's SIGTERM drain (`drain`), failover and scale-out (`failover`), what a `409 moved`
//! teaches the router (`moved`), and the router's added latency, a benchmark (`latency`).

#[path = "../common/mod.rs"]
mod common;

mod costs;
mod drain;
mod failover;
mod history;
mod latency;
mod meeting;
mod moved;
mod revocation;
mod server_api;
