//! Whole-binary cluster tests: three (or four) `atrium-node` processes sharing
//! one Postgres database and one coordinator, every test run against NATS and
//! against Redis. They need the suite's services (`scripts/services.sh start
//! && source .services/env`); without them they fail, never skip.
//!
//! Each test makes its own database and coordinator namespace, so tests run
//! in parallel without meeting. Leases are short (1.5 s) so failovers are
//! quick; every wait has a deadline.

#[path = "../common/mod.rs"]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

const LEASE_MS: u64 = 1500;
const THREE: [&str; 3] = ["n0", "n1", "n2"];

/// Guests with the file's edit key: no per-account cap to think about.
fn guests(files: &[(String, String)], per_file: usize) -> Vec<Peer> {
    let mut peers = Vec::new();
    for (id, key) in files {
        for _ in 0..per_file {
            peers.push(Peer::new(id, Hello::key(key)));
        }
    }
    peers
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

mod accounts;
mod fencing;
mod handover;
mod joining;
mod meeting;
