//! The NATS backend: JetStream KV buckets, plus a core NATS subject for fleet messages.
//!
//! Three buckets per namespace `ns` (history 1 each, made in `nats/buckets.rs`):
//! - `{ns}-members`: key = node id, value = [`MemberRecord`] JSON; `max_age` = the lease time,
//!   so a record lapses unless heartbeats rewrite it (`nats/members.rs`);
//! - `{ns}-leases`: key = encoded file id, value = `{node, epoch, inc}` JSON, held while the
//!   holder's incarnation `inc` lives (`nats/leases.rs`, `nats/keeping.rs`);
//! - `{ns}-state`: no expiry; fleet-wide counters (`nats/counters.rs`).
//!
//! Lapses: the buckets set `limit_markers` (NATS 2.11+), so when `max_age` removes a record the
//! server leaves a marker that watchers see as a purge. Every instance watches the members
//! bucket and keeps the live set in memory (`nats/view.rs`, fed by `nats/follow.rs`);
//! `members()` and the liveness checks of the counters read that view, and it also drops a
//! member locally when no heartbeat was seen for the lease time plus half of it, in case a
//! marker is missed.
//!
//! Round trips to the server, uncontended, measured by the contract tests' shape of calls:
//! `join` 2 (read, write); `heartbeat` 1 (a write expecting the revision this instance last
//! wrote; 2 when another instance joined the node); `leave` 1; `evict` 2 (read, purge at the
//! revision read); `members` 0 (the watched view);
//! `acquire` of a free file 3 (read the lease, read the bucket's last revision, write the
//! lease; only a race for the same file costs a retry), of a dead holder's file 4 (its
//! membership is read from the server: a view that is behind must not make a live holder look
//! dead), of a lease already ours 1; `renew` 1 (2 after another instance renewed it);
//! `release` 1; `holder` 1 (2 when this instance's view does not show the holder holding);
//! `count_up` 2 (read, compare-and-set; none to refuse at the limit after the read);
//! `count_down` 2; `count` 1; `publish` 1 (publish and flush); `watch` 2 once per instance
//! (subscriptions), then none.
//!
//! JetStream acknowledges before it syncs to disk, so a crash of the server can lose recent
//! writes: the coordinator is a hint, the document store's fenced epoch is the judge.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_nats::jetstream::kv::{self, Operation};
use tokio::sync::{oneshot, watch, OnceCell};

use crate::delegate::coordinator_via_inner;
use crate::events::Hub;
use crate::record::{unavailable, MemberRecord};
use crate::{CoordinatorSettings, NodeId, Result};

mod buckets;
mod counters;
mod events;
mod follow;
mod keeping;
mod leases;
mod members;
mod servers;
mod view;

use view::View;

/// How often a compare-and-set is retried when other writers keep winning.
const CAS_TRIES: usize = 16;
/// Markers left by lapses live this long (the server's minimum).
const MARKER_TTL: Duration = Duration::from_secs(1);
/// The deadline for creating and deleting buckets, which write to the server's disk.
const BUCKET_ADMIN_TIMEOUT: Duration = Duration::from_secs(15);

pub struct NatsCoordinator {
    inner: Arc<Inner>,
}

struct Inner {
    settings: CoordinatorSettings,
    ns: String,
    client: async_nats::Client,
    members: kv::Store,
    leases: kv::Store,
    state: kv::Store,
    hub: Arc<Hub>,
    view: Arc<View>,
    /// Revisions this instance last wrote, so renewals are one compare-and-set: members by
    /// node, leases by file as (epoch, holder incarnation, revision).
    own_members: Mutex<HashMap<NodeId, (u64, MemberRecord)>>,
    own_leases: Mutex<HashMap<String, (u64, String, u64)>>,
    rejoins: watch::Sender<u64>,
    watching: OnceCell<()>,
    /// Dropping it stops the background tasks.
    _stop: oneshot::Sender<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The record under `key`, or `None` when there is none or only a marker (a delete, a purge
/// or a lapse): what every reader but a compare-and-set on a marker wants.
async fn stored(store: &kv::Store, key: &str, what: &str) -> Result<Option<kv::Entry>> {
    let entry = store.entry(key).await.map_err(|e| unavailable(what, e))?;
    Ok(entry.filter(|e| e.operation == Operation::Put))
}

coordinator_via_inner!(NatsCoordinator);
