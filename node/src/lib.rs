//! `atrium-node`: the room node of Atrium.
//!
//! A message's path, by module:
//!
//! - [`server`]: listeners, shared state, orderly shutdown.
//! - [`http`]: the HTTP API (accounts, files, links, health, metrics) and the upgrade.
//! - [`socket`]: one WebSocket: hello, then messages to its room, frames from its [`outbox`].
//! - [`protocol`]: parsing client messages and encoding the node's.
//! - [`room`]: one open file: ordering, access, the recent operations (for resume), snapshots.
//! - [`doc`]: the document model and its limits; [`lane`]: where work on large documents runs.
//! - [`journal`]: group commit of every room's patches, one sync per turn.
//! - [`store`]: the document store trait and the embedded SQLite store.
//! - [`auth`], [`sessions`]: passwords, tokens, and sockets by session.
//! - [`limits`], [`memory`], [`storage`]: rate limits, address caps, the node's memory
//!   budget, each account's storage;
//!   [`allocator`]: mimalloc, and giving memory back.
//! - [`config`], [`metrics`], [`ids`], [`clock`]: settings, metrics, typed ids, time.
//! - [`webhook`]: events to the app's endpoints, through a durable outbox in the store.

// `unsafe` is allowed only where a system call needs it, and says why (allocator, lane).
#![deny(unsafe_code)]

pub mod admission;
pub mod allocator;
pub mod apptoken;
pub mod auth;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod counted;
pub mod doc;
pub mod history;
pub mod http;
pub mod ids;
pub mod journal;
pub mod lane;
pub mod limits;
pub mod linger;
pub mod memory;
pub mod metrics;
pub mod outbox;
pub mod priority;
pub mod protocol;
pub mod room;
pub mod server;
pub mod sessions;
pub mod socket;
pub mod state;
pub mod stats;
pub mod storage;
pub mod store;
pub mod webhook;
pub mod write_deadline;
pub mod ws;

pub use config::NodeConfig;
pub use server::{start, Running};
