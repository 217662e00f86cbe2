//! Presence on the room tick, against the real binary: at most one `presences`
//! per receiver per tick, never the receiver's own state, at most 60 people a
//! message, full state only for the receiver's page, catch-up for joiners and
//! page switchers, leavers batched, viewers included, and the busy-room rate.

#[path = "../common/mod.rs"]
mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

mod catch_up;
mod leaves;
mod pages;
mod reading;
mod ticks;

use reading::*;
