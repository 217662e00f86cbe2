//! Shared helpers for the whole-binary tests of `atrium-node`.
//!
//! Every test starts its own node (its own port, its own data folder) with
//! [`Node::start`] (`node`), talks HTTP to it through [`http`] (`http`, `metrics`)
//! and the socket through [`Client`] (`client`) or, byte by byte, [`RawWs`] (`raw`);
//! the cluster tests start several nodes (`cluster`) and drive peers and crowds
//! across them (`peer`), checking what they hold against a model (`model`). What
//! other crates' tests share too comes from `atrium-testkit`. Every wait has a
//! deadline, so a broken server fails a test instead of hanging it.

// Each test file uses some of these helpers, never all of them.
#![allow(dead_code, unused_imports)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

pub use atrium_testkit::process::Proc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Map, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The default deadline for one expected message or answer.
pub const WAIT: Duration = Duration::from_secs(10);

/// A password that satisfies the sign-up rules.
pub const PASSWORD: &str = "correct horse battery staple";

pub use atrium_testkit::env::{secret, service_env};

/// The node trusts the test as its proxy: `X-Forwarded-For` names the client.
pub const TRUST_THE_TEST: (&str, &str) = ("ATRIUM_TRUST_PROXY", "127.0.0.1");

/// A send queue of 64 frames or 64 KiB: a socket that stops reading fills it soon.
pub const SMALL_SEND_QUEUE: [(&str, &str); 2] = [
    ("ATRIUM_SEND_QUEUE", "64"),
    ("ATRIUM_SEND_QUEUE_BYTES", "65536"),
];

/// An email address no other test uses.
pub fn unique_email(who: &str) -> String {
    format!("{who}-{}@example.test", &secret()[..12])
}

mod client;
mod closes;
mod cluster;
mod http;
mod metrics;
mod model;
mod node;
mod peer;
mod raw;

pub use client::*;
pub use closes::*;
pub use cluster::*;
pub use http::*;
pub use metrics::*;
pub use model::*;
pub use node::*;
pub use peer::*;
pub use raw::*;
