//! Hostile clients against one real node.
//!
//! Each case sends what a careless or malicious client might send and checks
//! the contract's answer. While the attack runs, two bystanders in the same
//! file measure relay latency (one edits, the other receives): its median
//! during the attack is compared with the median just before it. The node's
//! memory (RSS from `/proc/<pid>/status`) is read before and after, and the
//! document is checked at the end: nothing but the bystanders' edits changed.
//!
//! The cases run one at a time (a shared lock), so their latency figures are
//! not disturbed by each other. Each prints one `FIGURE {json}` line to stderr
//! (`cargo test -p atrium-node --test hostile -- --nocapture`); the figures
//! and pass criteria are tabled in docs/reliability.md.

#[path = "../common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// One case at a time: latency figures must not measure the other cases.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Cheap password hashing, for nodes whose case is not about hashing.
const FAST_HASH: [(&str, &str); 2] = [
    ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
    ("ATRIUM_ARGON2_ITERATIONS", "1"),
];

mod address_bytes;
mod amplification;
mod before_hello;
mod bodies;
mod bystanders;
mod connections;
mod counting;
mod deflate;
mod downloads;
mod figures;
mod frames;
mod held_welcomes;
mod history_work;
mod huge;
mod idle_rooms;
mod ids;
mod large_log;
mod large_nodes;
mod malformed;
mod memory_budget;
mod nesting;
mod never_reads;
mod parsed_patches;
mod presence_flood;
mod raw_ws;
mod reconnects;
mod request_flood;
mod resumes;
mod sign_in;
mod silent;
mod stale_ops;
mod welcome;

use bystanders::*;
use counting::*;
use deflate::*;
use figures::*;
use raw_ws::*;
