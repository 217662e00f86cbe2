//! The NATS backend: JetStream KV buckets, plus a core NATS subject for fleet messages.
//!
//! Three buckets per namespace `ns` (history 1 each):
//! - `{ns}-members`: key = node id, value = [`MemberRecord`] JSON; `max_age` = the lease time,
//!   so a record lapses unless heartbeats rewrite it;
//! - `{ns}-leases`: key = encoded file id, value = `{node, epoch, inc}` JSON, where `inc` is
//!   the holder's incarnation: the lease is held while that incarnation's membership lives, so
//!   a dead node's leases are all free when its membership lapses, and a live holder writes
//!   nothing per file to keep them. `max_age` = [`LEASE_RECORD_LIFETIME`] (hours), which only
//!   clears records nobody will take again; holders rewrite theirs well within it (`renew`).
//!   Releasing purges the record, leaving a marker that expires within a second (a delete
//!   marker would stay for the records' whole lifetime, one per file opened). Taking a lease
//!   is a write expecting the key's last revision (0, a marker's, or a
//!   dead holder's record's); renewing and releasing expect the revision we last wrote, so they
//!   only succeed while the lease is still ours (compare-and-set on the revision);
//!   A file's epoch is one above the bucket's last revision when the lease is taken (the
//!   bucket's revisions are one sequence for all its keys, so a file's epochs only grow, and no
//!   key is written by every acquire);
//! - `{ns}-state`: no expiry. `c.{counter}` holds one counter's slots as
//!   `{node: [incarnation, slots]}`, updated by compare-and-set, and summed over the nodes whose
//!   live membership has that incarnation.
//!
//! Lapses: the buckets set `limit_markers` (NATS 2.11+), so when `max_age` removes a record the
//! server leaves a marker that watchers see as a purge. Every instance watches the members
//! bucket and keeps the live set in memory (`nats_watch`); `members()` and the liveness checks
//! of the counters read that view, and it also drops a member locally when no heartbeat was
//! seen for the lease time plus half of it, in case a marker is missed.
//!
//! Round trips to the server, uncontended, measured by the contract tests' shape of calls:
//! `join` 2 (read, write); `heartbeat` 1 (a write expecting the revision this instance last
//! wrote; 2 when another instance joined the node); `leave` 1; `members` 0 (the watched view);
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
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::context::ContextBuilder;
use async_nats::jetstream::kv::{self, Operation, UpdateErrorKind};
use bytes::Bytes;
use tokio::sync::{broadcast, oneshot, watch, OnceCell};

use crate::events::Hub;
use crate::keys::{check_namespace, encode};
use crate::nats_watch::{self, View, TOPIC_HEADER};
use crate::record::{check_member, new_incarnation, unavailable, LeaseRecord, MemberRecord};
use crate::types::check_key;
use crate::{
    Coordinator, CoordinatorError, CoordinatorEvent, CoordinatorSettings, Lease, Member, NodeId,
    LEASE_RECORD_LIFETIME,
};

/// How often a compare-and-set is retried when other writers keep winning.
const CAS_TRIES: usize = 16;
/// Markers left by lapses live this long (the server's minimum).
const MARKER_TTL: Duration = Duration::from_secs(1);
/// The deadline for creating and deleting buckets, which write to the server's disk.
const BUCKET_ADMIN_TIMEOUT: Duration = Duration::from_secs(15);

pub struct NatsCoordinator {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl NatsCoordinator {
    /// Connects to `url` (`nats://host:port`), creates or updates the namespace's buckets to
    /// match `settings`, and starts watching the membership.
    pub async fn connect(
        url: &str,
        ns: &str,
        settings: CoordinatorSettings,
    ) -> Result<Self, CoordinatorError> {
        settings.validate()?;
        check_namespace(ns)?;
        let timeout = settings.heartbeat.max(Duration::from_millis(500));
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(timeout)
            .request_timeout(Some(timeout))
            .connect(url)
            .await
            .map_err(|e| unavailable("nats connect", e))?;
        let js = ContextBuilder::new().timeout(timeout).build(client.clone());
        // Creating or deleting a stream writes to disk on the server and can take seconds on a
        // busy machine; only the hot path (leases, heartbeats) needs the short deadline.
        let admin = ContextBuilder::new()
            .timeout(timeout.max(BUCKET_ADMIN_TIMEOUT))
            .build(client.clone());
        let bucket = |name: &str, max_age: Duration| kv::Config {
            bucket: format!("{ns}-{name}"),
            history: 1,
            max_age,
            limit_markers: Some(MARKER_TTL),
            ..Default::default()
        };
        let mut stores = Vec::new();
        for (name, age) in [
            ("members", settings.lease),
            ("leases", LEASE_RECORD_LIFETIME),
            ("state", Duration::ZERO),
        ] {
            admin
                .create_or_update_key_value(bucket(name, age))
                .await
                .map_err(|e| unavailable("nats bucket", e))?;
            // Used through the hot path's context, with its short deadline.
            let store = js
                .get_key_value(format!("{ns}-{name}"))
                .await
                .map_err(|e| unavailable("nats bucket", e))?;
            stores.push(store);
        }
        let [members, leases, state] = <[kv::Store; 3]>::try_from(stores).expect("three");
        let (stop, stopped) = oneshot::channel();
        let inner = Arc::new(Inner {
            settings,
            ns: ns.to_owned(),
            client,
            members,
            leases,
            state,
            hub: Hub::new(),
            view: View::new(),
            own_members: Mutex::default(),
            own_leases: Mutex::default(),
            rejoins: watch::Sender::new(0),
            watching: OnceCell::new(),
            _stop: stop,
        });
        nats_watch::spawn_members(
            inner.members.clone(),
            inner.view.clone(),
            inner.hub.clone(),
            inner.settings,
            stopped,
        );
        Ok(Self { inner })
    }

    /// Messages the leases bucket holds (records and markers not yet expired): what an
    /// operator sizing the server, and the tests, look at.
    pub async fn lease_bucket_messages(&self) -> Result<u64, CoordinatorError> {
        let info = self
            .inner
            .leases
            .stream
            .get_info()
            .await
            .map_err(|e| unavailable("nats leases bucket", e))?;
        Ok(info.state.messages)
    }

    /// Deletes the namespace's buckets (tests clean up with it).
    pub async fn destroy(&self) -> Result<(), CoordinatorError> {
        let admin = ContextBuilder::new()
            .timeout(BUCKET_ADMIN_TIMEOUT)
            .build(self.inner.client.clone());
        for name in ["members", "leases", "state"] {
            let bucket = format!("{}-{name}", self.inner.ns);
            admin
                .delete_key_value(&bucket)
                .await
                .map_err(|e| unavailable("nats delete bucket", e))?;
        }
        Ok(())
    }
}

/// The lease key of a file, and the member key of a node.
fn lease_key(file: &str) -> String {
    encode(file)
}

pub(crate) fn member_key(node: &NodeId) -> String {
    encode(node.as_str())
}

fn counter_key(counter: &str) -> String {
    format!("c.{}", encode(counter))
}

type Slots = HashMap<String, (String, u64)>;

impl Inner {
    fn lease(&self, file: &str, node: &NodeId, epoch: u64) -> Lease {
        Lease {
            file: file.to_owned(),
            node: node.clone(),
            epoch,
            expires_at: std::time::Instant::now() + self.settings.lease,
        }
    }

    /// An epoch for a file being taken now: one above the last revision the leases bucket
    /// has given to any key. Every earlier lease of the file was written at a revision at
    /// most that, and its epoch was at most its revision, so a file's epochs only grow
    /// (while the bucket lives) without a counter that every acquire must update: two
    /// files opening together never contend; two nodes taking one file may compute the
    /// same epoch, but only one wins the file's compare-and-set.
    async fn next_epoch(&self) -> Result<u64, CoordinatorError> {
        let info = self
            .leases
            .stream
            .get_info()
            .await
            .map_err(|e| unavailable("nats epoch", e))?;
        Ok(info.state.last_sequence + 1)
    }

    /// The incarnation `node` is live with: this instance's view first, else its record in
    /// the members bucket (the view may not have seen a node that joined a moment ago), so a
    /// live holder is never taken for a dead one. `None` when it is not a member.
    async fn live_incarnation(&self, node: &str) -> Result<Option<String>, CoordinatorError> {
        let Ok(id) = NodeId::parse(node) else {
            return Ok(None);
        };
        if let Some(inc) = self.view.incarnation(&id) {
            return Ok(Some(inc));
        }
        self.read_incarnation(&id).await
    }

    /// The incarnation of `node`'s membership record as the server has it now (and into the
    /// view with it).
    async fn read_incarnation(&self, id: &NodeId) -> Result<Option<String>, CoordinatorError> {
        let entry = self
            .members
            .entry(member_key(id))
            .await
            .map_err(|e| unavailable("nats membership", e))?;
        Ok(entry
            .filter(|e| e.operation == Operation::Put)
            .and_then(|e| MemberRecord::parse(&e.value))
            .map(|record| {
                self.view.seen(&record);
                record.inc
            }))
    }

    /// Whether a lease record's holder still holds it: live with the incarnation that took it.
    /// Only a yes is taken from the view: a view that is behind (the holder joined again a
    /// moment ago and took the file under its new incarnation) must not make a live holder
    /// look dead, so a no is asked of the server before a file is taken over.
    async fn holds(&self, record: &LeaseRecord) -> Result<bool, CoordinatorError> {
        let Ok(id) = NodeId::parse(&record.node) else {
            return Ok(false);
        };
        if self.view.incarnation(&id).as_deref() == Some(record.inc.as_str()) {
            return Ok(true);
        }
        Ok(self.read_incarnation(&id).await?.as_deref() == Some(record.inc.as_str()))
    }

    /// Removes a lease record still at revision `rev`; `false` when it changed (or the server
    /// did not answer). What is left is a marker that expires within a second, not one per
    /// file for the records' whole lifetime (hours), so a fleet opening and closing many rooms
    /// does not fill the bucket with markers.
    async fn free_lease(&self, key: &str, rev: u64) -> bool {
        self.leases
            .purge_expect_revision_with_ttl(key, rev, MARKER_TTL)
            .await
            .is_ok()
    }

    /// The current slots of a counter and the revision to expect when writing them.
    async fn slots(&self, key: &str) -> Result<(Slots, u64), CoordinatorError> {
        match self
            .state
            .entry(key)
            .await
            .map_err(|e| unavailable("nats counter", e))?
        {
            Some(e) if e.operation == Operation::Put => Ok((
                serde_json::from_slice(&e.value).unwrap_or_default(),
                e.revision,
            )),
            Some(e) => Ok((Slots::new(), e.revision)),
            None => Ok((Slots::new(), 0)),
        }
    }

    /// Writes a counter's slots expecting `rev`; `Ok(false)` when someone wrote first.
    async fn write_slots(
        &self,
        key: &str,
        slots: &Slots,
        rev: u64,
    ) -> Result<bool, CoordinatorError> {
        let result = if slots.is_empty() && rev != 0 {
            // An emptied counter leaves only a marker that expires, not a key per account.
            self.state
                .purge_expect_revision_with_ttl(key, rev, MARKER_TTL)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        } else {
            let json = serde_json::to_vec(slots).expect("slots serialize");
            match self.state.update(key, json.into(), rev).await {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => return Ok(false),
                Err(e) => Err(e.to_string()),
            }
        };
        match result {
            Ok(()) => Ok(true),
            // A purge reports a stale revision only through its message.
            Err(e) if e.contains("wrong last sequence") => Ok(false),
            Err(e) => Err(unavailable("nats counter", e)),
        }
    }
}

#[async_trait::async_trait]
impl Coordinator for NatsCoordinator {
    async fn join(&self, member: Member) -> Result<(), CoordinatorError> {
        check_member(&member)?;
        let me = &self.inner;
        let key = member_key(&member.id);
        let old = me
            .members
            .entry(key.as_str())
            .await
            .map_err(|e| unavailable("nats join", e))?;
        // Joining again while live keeps the incarnation (and so the node's slots and leases).
        let inc = match old
            .filter(|e| e.operation == Operation::Put)
            .and_then(|e| MemberRecord::parse(&e.value))
        {
            Some(live) => live.inc,
            None => {
                me.rejoins.send_modify(|n| *n += 1);
                new_incarnation()
            }
        };
        let record = MemberRecord::new(&member, inc);
        let rev = me
            .members
            .put(key.as_str(), record.to_json().into())
            .await
            .map_err(|e| unavailable("nats join", e))?;
        me.view.seen(&record);
        lock(&me.own_members).insert(member.id, (rev, record));
        me.view.announce(&me.hub, None);
        Ok(())
    }

    async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<(), CoordinatorError> {
        let me = &self.inner;
        let key = member_key(node);
        let known = lock(&me.own_members).get(node).cloned();
        let (rev, mut record) = match known {
            Some(k) => k,
            None => match me
                .members
                .entry(key.as_str())
                .await
                .map_err(|e| unavailable("nats heartbeat", e))?
            {
                Some(e) if e.operation == Operation::Put => {
                    let r = MemberRecord::parse(&e.value).ok_or(CoordinatorError::Lost)?;
                    (e.revision, r)
                }
                _ => return Err(CoordinatorError::Lost),
            },
        };
        let changed = record.draining != draining;
        record.draining = draining;
        match me
            .members
            .update(key.as_str(), record.to_json().into(), rev)
            .await
        {
            Ok(new_rev) => {
                me.view.seen(&record);
                lock(&me.own_members).insert(node.clone(), (new_rev, record));
                if changed {
                    me.view.announce(&me.hub, None);
                }
                Ok(())
            }
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                // Lapsed (a marker), left, or joined again elsewhere: the fleet moved on.
                lock(&me.own_members).remove(node);
                Err(CoordinatorError::Lost)
            }
            Err(e) => Err(unavailable("nats heartbeat", e)),
        }
    }

    async fn leave(&self, node: &NodeId) -> Result<(), CoordinatorError> {
        let me = &self.inner;
        me.members
            .delete(member_key(node))
            .await
            .map_err(|e| unavailable("nats leave", e))?;
        lock(&me.own_members).remove(node);
        if me.view.forget(node) {
            me.view.announce(&me.hub, None);
        }
        Ok(())
    }

    async fn members(&self) -> Result<Vec<Member>, CoordinatorError> {
        let me = &self.inner;
        me.view.wait_synced(me.settings.lease * 2).await?;
        Ok(me.view.members())
    }

    async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease, CoordinatorError> {
        check_key("file id", file)?;
        let me = &self.inner;
        let mine = me
            .live_incarnation(node.as_str())
            .await?
            .ok_or(CoordinatorError::Lost)?;
        let key = lease_key(file);
        for _ in 0..CAS_TRIES {
            let entry = me
                .leases
                .entry(key.as_str())
                .await
                .map_err(|e| unavailable("nats acquire", e))?;
            let rev = match entry {
                Some(e) if e.operation == Operation::Put => {
                    let held: LeaseRecord = serde_json::from_slice(&e.value)
                        .map_err(|e| unavailable("nats lease record", e))?;
                    if held.node == node.as_str() && held.inc == mine {
                        let cached = (held.epoch, mine, e.revision);
                        lock(&me.own_leases).insert(file.to_owned(), cached);
                        return Ok(me.lease(file, node, held.epoch));
                    }
                    if me.holds(&held).await? {
                        let holder = NodeId::parse(&held.node)?;
                        return Err(CoordinatorError::Held { holder });
                    }
                    // Its holder is gone (or it is ours from an earlier incarnation).
                    e.revision
                }
                Some(e) => e.revision,
                None => 0,
            };
            let epoch = me.next_epoch().await?;
            let value = LeaseRecord {
                node: node.as_str().to_owned(),
                epoch,
                inc: mine.clone(),
            };
            let json = serde_json::to_vec(&value).expect("lease serializes");
            match me.leases.update(key.as_str(), json.into(), rev).await {
                Ok(new_rev) => {
                    let cached = (epoch, value.inc, new_rev);
                    lock(&me.own_leases).insert(file.to_owned(), cached);
                    return Ok(me.lease(file, node, epoch));
                }
                // Someone else wrote first: look again (probably Held now).
                Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => continue,
                Err(e) => return Err(unavailable("nats acquire", e)),
            }
        }
        Err(CoordinatorError::Unavailable("lease contended".into()))
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, CoordinatorError> {
        let me = &self.inner;
        let key = lease_key(&lease.file);
        // Held only while the holder's membership lives with the incarnation that took it.
        let Some(inc) = me.live_incarnation(lease.node.as_str()).await? else {
            lock(&me.own_leases).remove(&lease.file);
            return Err(CoordinatorError::Lost);
        };
        let value = LeaseRecord {
            node: lease.node.as_str().to_owned(),
            epoch: lease.epoch,
            inc,
        };
        let json: Bytes = serde_json::to_vec(&value).expect("lease serializes").into();
        let cached = lock(&me.own_leases)
            .get(&lease.file)
            .filter(|(epoch, inc, _)| *epoch == lease.epoch && *inc == value.inc)
            .map(|(_, _, rev)| *rev);
        let rev = match cached {
            Some(rev) => rev,
            None => match me
                .leases
                .entry(key.as_str())
                .await
                .map_err(|e| unavailable("nats renew", e))?
            {
                Some(e)
                    if e.operation == Operation::Put
                        && serde_json::from_slice::<LeaseRecord>(&e.value)
                            .ok()
                            .as_ref()
                            == Some(&value) =>
                {
                    e.revision
                }
                _ => return Err(CoordinatorError::Lost),
            },
        };
        match me.leases.update(key.as_str(), json, rev).await {
            Ok(new_rev) => {
                let cached = (lease.epoch, value.inc, new_rev);
                lock(&me.own_leases).insert(lease.file.clone(), cached);
                Ok(me.lease(&lease.file, &lease.node, lease.epoch))
            }
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                lock(&me.own_leases).remove(&lease.file);
                if cached.is_some() {
                    // Another instance may have renewed it for us: check once more.
                    return self.renew(lease).await;
                }
                Err(CoordinatorError::Lost)
            }
            Err(e) => Err(unavailable("nats renew", e)),
        }
    }

    async fn release(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        let me = &self.inner;
        let key = lease_key(&lease.file);
        let cached = lock(&me.own_leases)
            .remove(&lease.file)
            .filter(|(epoch, _, _)| *epoch == lease.epoch);
        if let Some((_, _, rev)) = cached {
            if me.free_lease(&key, rev).await {
                return Ok(());
            }
        }
        // Not known here, or the fast path failed: delete only if the record is ours.
        let entry = me
            .leases
            .entry(key.as_str())
            .await
            .map_err(|e| unavailable("nats release", e))?;
        if let Some(e) = entry.filter(|e| e.operation == Operation::Put) {
            let held: Option<LeaseRecord> = serde_json::from_slice(&e.value).ok();
            if held.is_some_and(|h| h.node == lease.node.as_str() && h.epoch == lease.epoch) {
                // A failure here means it changed meanwhile, so it is no longer ours.
                me.free_lease(&key, e.revision).await;
            }
        }
        Ok(())
    }

    async fn holder(&self, file: &str) -> Result<Option<NodeId>, CoordinatorError> {
        let me = &self.inner;
        let entry = me
            .leases
            .entry(lease_key(file))
            .await
            .map_err(|e| unavailable("nats holder", e))?;
        let record = entry
            .filter(|e| e.operation == Operation::Put)
            .and_then(|e| serde_json::from_slice::<LeaseRecord>(&e.value).ok());
        match record {
            Some(r) if me.holds(&r).await? => Ok(NodeId::parse(&r.node).ok()),
            _ => Ok(None),
        }
    }

    fn rejoins(&self) -> watch::Receiver<u64> {
        self.inner.rejoins.subscribe()
    }

    async fn count_up(
        &self,
        counter: &str,
        node: &NodeId,
        limit: u64,
    ) -> Result<bool, CoordinatorError> {
        check_key("counter", counter)?;
        let me = &self.inner;
        me.view.wait_synced(me.settings.lease * 2).await?;
        let inc = me.view.incarnation(node).ok_or(CoordinatorError::Lost)?;
        if limit == 0 {
            return Ok(false);
        }
        let key = counter_key(counter);
        for _ in 0..CAS_TRIES {
            let (mut slots, rev) = me.slots(&key).await?;
            // Slots of lapsed incarnations stop counting and are dropped with this write.
            slots.retain(|n, (i, _)| me.view.is_live(n, i));
            if slots.values().map(|(_, n)| n).sum::<u64>() >= limit {
                return Ok(false);
            }
            let mine = slots
                .entry(node.as_str().to_owned())
                .or_insert((inc.clone(), 0));
            mine.1 += 1;
            if me.write_slots(&key, &slots, rev).await? {
                return Ok(true);
            }
        }
        Err(CoordinatorError::Unavailable("counter contended".into()))
    }

    async fn count_down(&self, counter: &str, node: &NodeId) -> Result<(), CoordinatorError> {
        let me = &self.inner;
        let key = counter_key(counter);
        for _ in 0..CAS_TRIES {
            let (mut slots, rev) = me.slots(&key).await?;
            match slots.get_mut(node.as_str()) {
                Some((_, n)) if *n > 1 => *n -= 1,
                Some(_) => {
                    slots.remove(node.as_str());
                }
                None => return Ok(()),
            }
            if me.write_slots(&key, &slots, rev).await? {
                return Ok(());
            }
        }
        Err(CoordinatorError::Unavailable("counter contended".into()))
    }

    async fn count(&self, counter: &str) -> Result<u64, CoordinatorError> {
        let me = &self.inner;
        me.view.wait_synced(me.settings.lease * 2).await?;
        let (slots, _) = me.slots(&counter_key(counter)).await?;
        Ok(slots
            .iter()
            .filter(|(n, (i, _))| me.view.is_live(n, i))
            .map(|(_, (_, k))| k)
            .sum())
    }

    async fn watch(&self) -> Result<broadcast::Receiver<CoordinatorEvent>, CoordinatorError> {
        let me = &self.inner;
        let rx = me.hub.subscribe();
        me.watching
            .get_or_try_init(|| {
                nats_watch::spawn_leases_and_messages(&me.leases, &me.client, &me.ns, &me.hub)
            })
            .await?;
        // A new watcher hears the membership at once, not only at the next change.
        if me.view.wait_synced(me.settings.lease).await.is_ok() {
            me.view.announce(&me.hub, Some(Duration::ZERO));
        }
        Ok(rx)
    }

    async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<(), CoordinatorError> {
        check_key("topic", topic)?;
        let me = &self.inner;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(TOPIC_HEADER, encode(topic).as_str());
        me.client
            .publish_with_headers(format!("{}.msg", me.ns), headers, payload.into())
            .await
            .map_err(|e| unavailable("nats publish", e))?;
        me.client
            .flush()
            .await
            .map_err(|e| unavailable("nats publish", e))
    }
}
