//! The Redis backend: keys with PX TTLs, one Lua script per operation (`src/lua/`), pub/sub.
//!
//! Keys under the namespace `ns`:
//! - `{ns}:m:{node}`: the membership record (JSON with an incarnation), PX = lease time;
//!   `{ns}:members` is a set of node ids, cleaned lazily when a listing finds a record gone;
//! - `{ns}:l:{file}`: the lease, `"node epoch incarnation"`: held while that node's
//!   membership lives with that incarnation, so a dead node's leases are all free when its
//!   record lapses and a live holder writes nothing per file to keep them. PX =
//!   [`LEASE_RECORD_LIFETIME`] (hours), which only clears records nobody takes again; holders
//!   extend theirs well within it (`renew`). `{ns}:e:{file}` is the file's epoch counter
//!   (INCR, so it only grows). It is one small key per file ever opened (files are only
//!   opened after the store found them), kept so that a file's epochs never repeat, and no key
//!   is one that every acquire of the fleet updates. Acquire takes the lease when the key is
//!   absent or its holder is gone; renew extends and release deletes only while the lease is
//!   still ours;
//! - `{ns}:c:{counter}`: a hash of `"node incarnation"` → slots; scripts sum only the fields
//!   whose node is live with that incarnation, dropping the others as they pass.
//!
//! Notifications: the scripts `PUBLISH` membership changes to `{ns}:ev:members` and lease
//! hand-overs to `{ns}:ev:leases`; fleet messages go to `{ns}:msg:{topic}`. A key that lapses
//! is silent (keyspace notifications need `CONFIG SET`, which managed Redis often forbids,
//! and would also fire on every renewal), so each watching instance lists the members every
//! heartbeat interval (one script call) and announces the change when a record has lapsed;
//! a lapsed lease is not announced, its successor's acquire is.
//!
//! Round trips, each operation being one script call: `join` 1, `heartbeat` 1, `leave` 1,
//! `evict` 1, `members` 1, `acquire` 1, `renew` 1, `release` 1, `holder` 1, `count_up` 1,
//! `count_down` 1, `count` 1, `publish` 1; `watch` 3 once per instance (subscriptions), then
//! one members listing per heartbeat interval. Scripts are sent by hash (`EVALSHA`, with the usual
//! fallback to `EVAL` once per connection). The scripts read keys they are not passed, so this
//! backend needs a single Redis server (or a primary), not Redis Cluster.

use std::sync::{Arc, Mutex};

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Script};
use tokio::sync::{watch, OnceCell};

use crate::delegate::coordinator_via_inner;
use crate::events::Hub;
use crate::CoordinatorSettings;

mod connection;
mod counters;
mod events;
mod leases;
mod members;
mod reports;

struct Scripts {
    join: Script,
    heartbeat: Script,
    leave: Script,
    evict: Script,
    members: Script,
    acquire: Script,
    renew: Script,
    release: Script,
    holder: Script,
    count: Script,
}

impl Scripts {
    fn load() -> Self {
        Self {
            join: Script::new(include_str!("lua/join.lua")),
            heartbeat: Script::new(include_str!("lua/heartbeat.lua")),
            leave: Script::new(include_str!("lua/leave.lua")),
            evict: Script::new(include_str!("lua/evict.lua")),
            members: Script::new(include_str!("lua/members.lua")),
            acquire: Script::new(include_str!("lua/acquire.lua")),
            renew: Script::new(include_str!("lua/renew.lua")),
            release: Script::new(include_str!("lua/release.lua")),
            holder: Script::new(include_str!("lua/holder.lua")),
            count: Script::new(include_str!("lua/count.lua")),
        }
    }
}

pub struct RedisCoordinator {
    inner: Arc<Inner>,
}

struct Inner {
    settings: CoordinatorSettings,
    ns: String,
    client: redis::Client,
    config: AsyncConnectionConfig,
    conn: Mutex<Option<MultiplexedConnection>>,
    scripts: Scripts,
    hub: Arc<Hub>,
    watching: OnceCell<()>,
    listing: tokio::sync::Mutex<()>,
    rejoins: watch::Sender<u64>,
}

coordinator_via_inner!(RedisCoordinator);
