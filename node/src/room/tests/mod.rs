//! The room core, driven by hand: commands in, frames and effects out, time
//! moved by the test. No socket, store, journal or clock is involved, so every
//! rule is checked deterministically and the whole set runs in milliseconds.

mod edits;
mod harness;
mod history;
mod lifecycle;
mod people;
mod person;
mod presence;
mod snapshots;

pub use harness::Harness;
pub use person::{As, Person};

use std::time::Duration;

use clap::Parser;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::access::Seat;
use super::core::{Opened, RoomCore, Rules};
use super::exit::{Effect, Exit};
use super::recent::RecentOps;
use super::snapshot::SnapshotJob;
use super::{JoinError, JoinRequest, Joined, RoomCmd};
use crate::config::NodeConfig;
use crate::doc::{DocLimits, Document};
use crate::ids::{AccountId, ClientKey, FileId};
use crate::journal::Appended;
use crate::memory::MemoryGuard;
use crate::outbox::{outbox, Budget, ConnId, Out, Outbox, OutboxReceiver};
use crate::protocol::{self, ClientMessage};
use crate::store::{FileAppend, FileRecord, LinkAccess, StoreError};

pub const VIEW_KEY: &str = "view-key-0123456789";
pub const EDIT_KEY: &str = "edit-key-0123456789";

pub fn record(owner: &AccountId, link: LinkAccess) -> FileRecord {
    FileRecord {
        id: FileId::generate(),
        owner: owner.clone(),
        name: "Test file".into(),
        link,
        view_key: VIEW_KEY.into(),
        edit_key: EDIT_KEY.into(),
        key_generation: 1,
        version: 0,
        updated_at: 0,
        viewers_see_history: false,
    }
}

pub fn config(settings: &[(&str, &str)]) -> NodeConfig {
    let mut args = vec!["atrium-node".to_string()];
    for (k, v) in settings {
        args.push(format!("--{k}={v}"));
    }
    NodeConfig::parse_from(args)
}

/// A room with its owner and one more person, both welcomed.
pub fn owner_and(who: As) -> (Harness, Person, Person) {
    let mut h = Harness::new();
    let owner = h.join(As::Owner);
    let other = h.join(who);
    (h, owner, other)
}

/// A room whose owner sent version 1 (`ops`, op id 1), handed to the journal
/// and not yet durable.
pub fn owner_wrote(ops: Value) -> (Harness, Person) {
    let mut h = Harness::new();
    let a = h.join(As::Owner);
    h.patch(&a, 1, ops);
    h.end_turn();
    (h, a)
}

/// The version each message carries.
pub fn versions(messages: &[Value]) -> Vec<u64> {
    messages.iter().filter_map(|m| m["v"].as_u64()).collect()
}

/// `put` of one shape.
pub fn put(id: &str, props: Value) -> Value {
    json!([{"op": "put", "id": id, "props": props}])
}
