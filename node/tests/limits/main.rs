//! The limits of a room node against the real binary: the editor and people
//! caps, message rates (429 then 4013), dropped presence floods, sockets per
//! account and per address (4029, with and without a trusted proxy), sign-in
//! and sign-up rates, backpressure (4008), ping deadlines, `/health` and
//! `/metrics`.

#[path = "../common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// Cheap password hashing, for tests that sign in many times.
const CHEAP_HASH: [(&str, &str); 2] = [
    ("ATRIUM_ARGON2_MEMORY_KIB", "1024"),
    ("ATRIUM_ARGON2_ITERATIONS", "1"),
];

fn counter(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metric(text, name, labels)
}

mod admission;
mod backpressure;
mod health;
mod pings;
mod rates;
mod scheduling;
mod seats;
mod sign_in;
mod sockets;
