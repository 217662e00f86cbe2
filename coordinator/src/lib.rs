//! Atrium's coordinator: who is alive, who serves which file, and fleet-wide counters.
//!
//! Every node holds one `Arc<dyn Coordinator>`. A single node uses the in-memory backend;
//! a fleet will share a networked one behind the same trait. The coordinator only bounds how
//! long two nodes may both believe they own a file: the document store's fenced epoch keeps
//! the data safe, so nothing here has to be perfect, only cheap and usually right.
//!
//! Modules:
//! - `types`: [`NodeId`], [`Member`], [`Lease`], [`Invalid`];
//! - `settings`: [`CoordinatorSettings`] and the default timing;
//! - `error`: [`CoordinatorError`] and the [`Result`] every call returns;
//! - `memory`: [`MemoryCoordinator`], everything in one process;
//! - `keeper`: [`LeaseKeeper`], follows one lease in the background and reports its loss;
//! - `events`: [`CoordinatorEvent`], what [`Coordinator::watch`] reports;
//! - `nats`: [`NatsCoordinator`], JetStream KV buckets plus core NATS subjects;
//! - `redis`: [`RedisCoordinator`], keys with PX TTLs, Lua scripts and pub/sub;
//! - `delegate`: the macro that forwards the trait to a backend's state, so each backend
//!   keeps one file per concept (membership, leases, counters, events);
//! - `ring`: [`Ring`], the consistent hash ring of live nodes (router and nodes agree on it);
//! - `connect`: [`connect`], the backend chosen by the URL's scheme.

#![forbid(unsafe_code)]

mod connect;
mod delegate;
mod error;
mod events;
mod keeper;
mod keys;
mod memory;
mod nats;
mod record;
mod redis;
mod ring;
mod settings;
mod types;

pub use connect::connect;
pub use error::{CoordinatorError, Result};
pub use events::CoordinatorEvent;
pub use keeper::{LeaseKeeper, StillMine};
pub use memory::MemoryCoordinator;
pub use nats::NatsCoordinator;
pub use redis::RedisCoordinator;
pub use ring::{Ring, SIP_KEYS, VNODES};
pub use settings::{
    CoordinatorSettings, DEFAULT_HEARTBEAT, DEFAULT_LEASE, DEFAULT_LEASE_REFRESH,
    LEASE_RECORD_LIFETIME,
};
pub use types::{Invalid, Lease, Member, NodeId, MAX_ADDRESS_LEN, MAX_KEY_LEN};

/// Membership, file leases and per-node counters, shared by every node of a fleet.
///
/// Calls never block on each other for long; a backend that cannot reach its store answers
/// [`CoordinatorError::Unavailable`] rather than waiting indefinitely.
#[async_trait::async_trait]
pub trait Coordinator: Send + Sync + 'static {
    /// Announces this node (id, address the router can reach, draining flag) and keeps it
    /// alive: membership records carry these and lapse `lease` after the last heartbeat.
    /// Joining again while live replaces the record; a join after a lapse begins a new
    /// incarnation, with no counter slots and no leases.
    async fn join(&self, member: Member) -> Result<()>;

    /// Keeps the membership alive and updates its draining flag. `Err(Lost)` when the record
    /// has lapsed or was never made: the node must `join` again (its slots are gone).
    async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<()>;

    /// Ends the membership at once and frees the node's counter slots and, with them, every
    /// lease it held (its holders should still release them, which tells watchers).
    async fn leave(&self, node: &NodeId) -> Result<()>;

    /// Ends the membership of a node that was found dead from outside (a router's connection
    /// to `address` refused, twice), as a lapse would a lease time later: every lease it held
    /// is free at once. It acts only while the record still carries `address` (a node that
    /// came back elsewhere is left alone) and is not draining (a drain ends in `leave`).
    /// `Ok(true)` when it ended the membership. A node that was in fact alive learns at its
    /// next heartbeat (`Err(Lost)`) and joins again; its old leases are lost, and the
    /// document store's epoch fences any write it still makes under them.
    async fn evict(&self, node: &NodeId, address: &str) -> Result<bool>;

    /// The live members, in no particular order.
    async fn members(&self) -> Result<Vec<Member>>;

    /// Takes the lease on a file for `node`, which must be a live member (`Err(Lost)`
    /// otherwise). A lease hangs on the membership of its holder: it is free when nobody took
    /// it, when it was released, or when its holder's membership (the incarnation that took
    /// it) has lapsed or left. A lease `node` already holds is returned with its epoch. The
    /// epoch only grows across holders; it is a hint, the document store is the judge.
    /// `Err(Held { holder })` when another live node holds it.
    async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease>;

    /// Confirms a lease is still held and rewrites its record, so that a live holder's
    /// record never reaches [`LEASE_RECORD_LIFETIME`]. Nothing needs it to keep a lease
    /// (the membership does): [`LeaseKeeper`] calls it every
    /// [`lease_refresh`](CoordinatorSettings::lease_refresh) and after a
    /// [rejoin](Self::rejoins). `Err(Lost)` if the holder's membership lapsed or someone else
    /// took the file.
    async fn renew(&self, lease: &Lease) -> Result<Lease>;

    /// Gives a lease up so a successor can take the file at once. Only acts while the lease
    /// is still ours; releasing a lapsed or taken-over lease is `Ok`.
    async fn release(&self, lease: &Lease) -> Result<()>;

    /// The node holding the file's lease, if it is a live member that still holds it.
    async fn holder(&self, file: &str) -> Result<Option<NodeId>>;

    /// Counts, for this instance, the joins that began a new incarnation of a node (it had
    /// lapsed, left or never joined): the leases of its earlier incarnation are no longer
    /// held, so [`LeaseKeeper`]s check theirs when it changes.
    fn rejoins(&self) -> tokio::sync::watch::Receiver<u64>;

    /// Takes one slot of a fleet-wide counter (e.g. sockets per account) for `node`:
    /// `Ok(true)` if the total across live nodes was below `limit`, `Ok(false)` at the limit.
    /// Slots belong to the node and vanish when its membership lapses or it leaves, so
    /// `node` must be a live member (`Err(Lost)` otherwise).
    async fn count_up(&self, counter: &str, node: &NodeId, limit: u64) -> Result<bool>;

    /// Gives one of `node`'s slots back; a no-op when it has none (e.g. they lapsed).
    async fn count_down(&self, counter: &str, node: &NodeId) -> Result<()>;

    /// The slots held across live nodes.
    async fn count(&self, counter: &str) -> Result<u64>;

    /// Subscribes to changes: membership (on change and at least once per lease time),
    /// lease hand-overs and fleet-wide messages. Events that happen after this returns are
    /// delivered; a receiver that falls far behind gets `RecvError::Lagged` and should
    /// re-read what it needs (`members`, `holder`). Needs a Tokio runtime.
    async fn watch(&self) -> Result<tokio::sync::broadcast::Receiver<CoordinatorEvent>>;

    /// Sends `payload` under `topic` to every watcher of every coordinator instance of the
    /// fleet (this one's included), at most once and without storing it: a watcher that is
    /// not connected at that moment misses it.
    async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<()>;

    /// Stores `node`'s report of the rooms it has open (an opaque payload the nodes agree
    /// on, at most [`MAX_ROOM_REPORT`] bytes), replacing its last one. A report counts only
    /// while its node is a live member; it lapses with the membership.
    async fn report_rooms(&self, node: &NodeId, report: Vec<u8>) -> Result<()>;

    /// The latest room report of each live member.
    async fn room_reports(&self) -> Result<Vec<(NodeId, Vec<u8>)>>;
}

/// The largest room report a node may store (NATS keeps values under 1 MiB by default).
pub const MAX_ROOM_REPORT: usize = 512 * 1024;

/// `Invalid` for a report over [`MAX_ROOM_REPORT`].
pub(crate) fn check_report(report: &[u8]) -> Result<()> {
    if report.len() > MAX_ROOM_REPORT {
        return Err(CoordinatorError::Invalid(format!(
            "a room report is at most {MAX_ROOM_REPORT} bytes"
        )));
    }
    Ok(())
}
