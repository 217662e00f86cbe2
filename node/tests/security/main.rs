//! Security boundaries against one real node:
//! who may edit, read and see what, what a signed-out token can still do,
//! whether one account can use up the capacity of others, and whether
//! secrets reach the node's logs.

#[path = "../common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const FAST_HASH: [(&str, &str); 2] = [
    ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
    ("ATRIUM_ARGON2_ITERATIONS", "1"),
];

async fn node(extra: &[(&str, &str)]) -> Node {
    let mut envs: Vec<(&str, &str)> = FAST_HASH.to_vec();
    envs.extend_from_slice(extra);
    Node::start(&envs).await
}

mod bad_bodies;
mod capacity;
mod connections;
mod guests;
mod logs;
mod other_accounts;
mod rooms;
mod sign_in;
mod signing_out;
mod viewers;
