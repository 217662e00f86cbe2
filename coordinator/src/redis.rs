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
//! `members` 1, `acquire` 1, `renew` 1, `release` 1, `holder` 1, `count_up` 1, `count_down`
//! 1, `count` 1, `publish` 1; `watch` 3 once per instance (subscriptions), then one members
//! listing per heartbeat interval. Scripts are sent by hash (`EVALSHA`, with the usual
//! fallback to `EVAL` once per connection). The scripts read keys they are not passed, so this
//! backend needs a single Redis server (or a primary), not Redis Cluster.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Script};
use tokio::sync::{broadcast, watch, OnceCell};

use crate::events::{spawn_members_ticker, Hub};
use crate::keys::check_namespace;
use crate::record::{check_member, new_incarnation, unavailable, MemberRecord};
use crate::types::check_key;
use crate::{
    Coordinator, CoordinatorError, CoordinatorEvent, CoordinatorSettings, Lease, Member, NodeId,
    LEASE_RECORD_LIFETIME,
};

struct Scripts {
    join: Script,
    heartbeat: Script,
    leave: Script,
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

impl RedisCoordinator {
    /// Connects to `url` (`redis://host:port[/db]`) and checks the server answers.
    pub async fn connect(
        url: &str,
        ns: &str,
        settings: CoordinatorSettings,
    ) -> Result<Self, CoordinatorError> {
        settings.validate()?;
        check_namespace(ns)?;
        let client = redis::Client::open(url).map_err(|e| unavailable("redis url", e))?;
        let timeout = settings.heartbeat.max(Duration::from_millis(500));
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let inner = Arc::new(Inner {
            settings,
            ns: ns.to_owned(),
            client,
            config,
            conn: Mutex::new(None),
            scripts: Scripts::load(),
            hub: Hub::new(),
            watching: OnceCell::new(),
            listing: tokio::sync::Mutex::new(()),
            rejoins: watch::Sender::new(0),
        });
        inner.conn().await?;
        Ok(Self { inner })
    }

    /// Deletes every key of the namespace (tests clean up with it).
    pub async fn destroy(&self) -> Result<(), CoordinatorError> {
        let mut conn = self.inner.conn().await?;
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.inner.ns))
            .query_async(&mut conn)
            .await
            .map_err(|e| unavailable("redis keys", e))?;
        if !keys.is_empty() {
            redis::cmd("DEL")
                .arg(keys)
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| unavailable("redis del", e))?;
        }
        Ok(())
    }
}

impl Inner {
    /// The shared connection, made again after a failure.
    async fn conn(&self) -> Result<MultiplexedConnection, CoordinatorError> {
        if let Some(c) = self
            .conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            return Ok(c);
        }
        let c = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await
            .map_err(|e| unavailable("redis connect", e))?;
        *self.conn.lock().unwrap_or_else(PoisonError::into_inner) = Some(c.clone());
        Ok(c)
    }

    fn failed(&self, what: &str, e: redis::RedisError) -> CoordinatorError {
        if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
            *self.conn.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
        unavailable(what, e)
    }

    fn key(&self, kind: &str, name: &str) -> String {
        format!("{}:{kind}:{name}", self.ns)
    }

    fn member_prefix(&self) -> String {
        format!("{}:m:", self.ns)
    }

    fn channel(&self, name: &str) -> String {
        format!("{}:ev:{name}", self.ns)
    }

    /// Lists the members and tells the hub, one listing at a time so an older listing is
    /// never announced after a newer one.
    async fn announce_members(&self, refresh: Option<Duration>) {
        let _one = self.listing.lock().await;
        if let Ok(members) = self.members().await {
            self.hub.members(members, refresh);
        }
    }

    async fn members(&self) -> Result<Vec<Member>, CoordinatorError> {
        let mut conn = self.conn().await?;
        let records: Vec<Vec<u8>> = self
            .scripts
            .members
            .key(format!("{}:members", self.ns))
            .arg(self.member_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis members", e))?;
        Ok(records
            .iter()
            .filter_map(|r| MemberRecord::parse(r)?.member())
            .collect())
    }

    /// Subscribes to the namespace's channels and turns what arrives into events; a lost
    /// connection is made again (events meanwhile are missed; the members listing catches up).
    async fn subscribe(self: &Arc<Self>) -> Result<redis::aio::PubSub, CoordinatorError> {
        let mut pubsub = self
            .client
            .get_async_pubsub()
            .await
            .map_err(|e| unavailable("redis pubsub", e))?;
        for channel in [self.channel("members"), self.channel("leases")] {
            pubsub
                .subscribe(channel)
                .await
                .map_err(|e| unavailable("redis subscribe", e))?;
        }
        pubsub
            .psubscribe(format!("{}:msg:*", self.ns))
            .await
            .map_err(|e| unavailable("redis subscribe", e))?;
        Ok(pubsub)
    }

    async fn start_watching(self: &Arc<Self>) -> Result<(), CoordinatorError> {
        let first = self.subscribe().await?;
        let weak = Arc::downgrade(self);
        let refresh = Some(self.settings.lease);
        spawn_members_ticker(self.settings, move || {
            let inner = weak.upgrade();
            async move {
                match inner {
                    Some(inner) => {
                        inner.announce_members(refresh).await;
                        true
                    }
                    None => false,
                }
            }
        });
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut pubsub = Some(first);
            loop {
                let Some(inner) = weak.upgrade() else { return };
                let ps = match pubsub.take() {
                    Some(ps) => ps,
                    None => match inner.subscribe().await {
                        Ok(ps) => ps,
                        Err(_) => {
                            drop(inner);
                            tokio::time::sleep(Duration::from_millis(250)).await;
                            continue;
                        }
                    },
                };
                drop(inner);
                let mut messages = ps.into_on_message();
                while let Some(msg) = messages.next().await {
                    let Some(inner) = weak.upgrade() else { return };
                    inner.on_message(&msg).await;
                }
            }
        });
        Ok(())
    }

    async fn on_message(&self, msg: &redis::Msg) {
        let channel = msg.get_channel_name();
        let payload = msg.get_payload_bytes();
        if channel == self.channel("members") {
            self.announce_members(None).await;
        } else if channel == self.channel("leases") {
            let text = String::from_utf8_lossy(payload);
            if let Some((node, file)) = text.split_once('\n') {
                self.hub.send(CoordinatorEvent::LeaseChanged {
                    file: file.to_owned(),
                    holder: NodeId::parse(node).ok(),
                });
            }
        } else if let Some(topic) = channel.strip_prefix(&format!("{}:msg:", self.ns)) {
            self.hub.send(CoordinatorEvent::Message {
                topic: topic.to_owned(),
                payload: payload.to_vec(),
            });
        }
    }
}

fn lease_value(lease: &Lease) -> String {
    format!("{} {}", lease.node, lease.epoch)
}

#[async_trait::async_trait]
impl Coordinator for RedisCoordinator {
    async fn join(&self, member: Member) -> Result<(), CoordinatorError> {
        check_member(&member)?;
        let me = &self.inner;
        let mut conn = me.conn().await?;
        let began: i64 = me
            .scripts
            .join
            .key(me.key("m", member.id.as_str()))
            .key(format!("{}:members", me.ns))
            .arg(member.id.as_str())
            .arg(&member.address)
            .arg(u8::from(member.draining))
            .arg(me.settings.lease.as_millis() as u64)
            .arg(new_incarnation())
            .arg(me.channel("members"))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| me.failed("redis join", e))?;
        if began == 1 {
            me.rejoins.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<(), CoordinatorError> {
        let me = &self.inner;
        let mut conn = me.conn().await?;
        let alive: i64 = me
            .scripts
            .heartbeat
            .key(me.key("m", node.as_str()))
            .arg(u8::from(draining))
            .arg(me.settings.lease.as_millis() as u64)
            .arg(me.channel("members"))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| me.failed("redis heartbeat", e))?;
        if alive == 1 {
            Ok(())
        } else {
            Err(CoordinatorError::Lost)
        }
    }

    async fn leave(&self, node: &NodeId) -> Result<(), CoordinatorError> {
        let me = &self.inner;
        let mut conn = me.conn().await?;
        me.scripts
            .leave
            .key(me.key("m", node.as_str()))
            .key(format!("{}:members", me.ns))
            .arg(node.as_str())
            .arg(me.channel("members"))
            .invoke_async::<i64>(&mut conn)
            .await
            .map_err(|e| me.failed("redis leave", e))?;
        Ok(())
    }

    async fn members(&self) -> Result<Vec<Member>, CoordinatorError> {
        self.inner.members().await
    }

    async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease, CoordinatorError> {
        check_key("file id", file)?;
        let me = &self.inner;
        let mut conn = me.conn().await?;
        let (ok, value): (i64, String) = me
            .scripts
            .acquire
            .key(me.key("l", file))
            .key(me.key("e", file))
            .arg(node.as_str())
            .arg(LEASE_RECORD_LIFETIME.as_millis() as u64)
            .arg(me.channel("leases"))
            .arg(file)
            .arg(me.member_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| me.failed("redis acquire", e))?;
        if ok == -1 {
            return Err(CoordinatorError::Lost);
        }
        if ok == 0 {
            return Err(CoordinatorError::Held {
                holder: NodeId::parse(&value)?,
            });
        }
        let epoch = value
            .parse()
            .map_err(|_| CoordinatorError::Unavailable(format!("bad epoch {value:?}")))?;
        Ok(Lease {
            file: file.to_owned(),
            node: node.clone(),
            epoch,
            expires_at: std::time::Instant::now() + me.settings.lease,
        })
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, CoordinatorError> {
        let me = &self.inner;
        let mut conn = me.conn().await?;
        let ours: i64 = me
            .scripts
            .renew
            .key(me.key("l", &lease.file))
            .arg(lease_value(lease))
            .arg(LEASE_RECORD_LIFETIME.as_millis() as u64)
            .arg(me.member_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| me.failed("redis renew", e))?;
        if ours != 1 {
            return Err(CoordinatorError::Lost);
        }
        Ok(Lease {
            expires_at: std::time::Instant::now() + me.settings.lease,
            ..lease.clone()
        })
    }

    async fn release(&self, lease: &Lease) -> Result<(), CoordinatorError> {
        let me = &self.inner;
        let mut conn = me.conn().await?;
        me.scripts
            .release
            .key(me.key("l", &lease.file))
            .arg(lease_value(lease))
            .arg(me.channel("leases"))
            .arg(&lease.file)
            .invoke_async::<i64>(&mut conn)
            .await
            .map_err(|e| me.failed("redis release", e))?;
        Ok(())
    }

    async fn holder(&self, file: &str) -> Result<Option<NodeId>, CoordinatorError> {
        let me = &self.inner;
        let mut conn = me.conn().await?;
        let holder: Option<String> = me
            .scripts
            .holder
            .key(me.key("l", file))
            .arg(me.member_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| me.failed("redis holder", e))?;
        Ok(holder.and_then(|node| NodeId::parse(&node).ok()))
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
        match self
            .inner
            .count(counter, "up", node.as_str(), limit)
            .await?
        {
            -1 => Err(CoordinatorError::Lost),
            n => Ok(n == 1),
        }
    }

    async fn count_down(&self, counter: &str, node: &NodeId) -> Result<(), CoordinatorError> {
        self.inner.count(counter, "down", node.as_str(), 0).await?;
        Ok(())
    }

    async fn count(&self, counter: &str) -> Result<u64, CoordinatorError> {
        let n = self.inner.count(counter, "count", "", 0).await?;
        Ok(n.max(0) as u64)
    }

    async fn watch(&self) -> Result<broadcast::Receiver<CoordinatorEvent>, CoordinatorError> {
        let me = &self.inner;
        let rx = me.hub.subscribe();
        me.watching.get_or_try_init(|| me.start_watching()).await?;
        // A new watcher hears the membership at once, not only at the next change.
        me.announce_members(Some(Duration::ZERO)).await;
        Ok(rx)
    }

    async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<(), CoordinatorError> {
        check_key("topic", topic)?;
        let me = &self.inner;
        let mut conn = me.conn().await?;
        redis::cmd("PUBLISH")
            .arg(format!("{}:msg:{topic}", me.ns))
            .arg(payload)
            .query_async::<i64>(&mut conn)
            .await
            .map_err(|e| me.failed("redis publish", e))?;
        Ok(())
    }
}

impl Inner {
    async fn count(
        &self,
        counter: &str,
        mode: &str,
        node: &str,
        limit: u64,
    ) -> Result<i64, CoordinatorError> {
        let mut conn = self.conn().await?;
        self.scripts
            .count
            .key(self.key("c", counter))
            .arg(self.member_prefix())
            .arg(mode)
            .arg(node)
            .arg(limit)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis count", e))
    }
}
