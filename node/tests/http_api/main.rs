//! The HTTP API of `docs/protocol.md` against the real binary.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

mod access;
mod accounts;
mod files;
mod health;
mod settings;
