//! Connecting: one multiplexed connection shared by every call and made again after a
//! failure, and the names of the namespace's keys and channels.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use tokio::sync::{watch, OnceCell};

use super::{Inner, RedisCoordinator, Scripts};
use crate::events::Hub;
use crate::keys::check_namespace;
use crate::record::unavailable;
use crate::{CoordinatorError, CoordinatorSettings, Result};

impl RedisCoordinator {
    /// Connects to `url` (`redis://host:port[/db]`) and checks the server answers.
    pub async fn connect(url: &str, ns: &str, settings: CoordinatorSettings) -> Result<Self> {
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
    pub async fn destroy(&self) -> Result<()> {
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
    fn shared(&self) -> MutexGuard<'_, Option<MultiplexedConnection>> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shared connection, made again after a failure.
    pub(super) async fn conn(&self) -> Result<MultiplexedConnection> {
        if let Some(c) = self.shared().clone() {
            return Ok(c);
        }
        let c = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await
            .map_err(|e| unavailable("redis connect", e))?;
        *self.shared() = Some(c.clone());
        Ok(c)
    }

    /// The error for a failed call; a connection that broke is dropped, to be made again.
    pub(super) fn failed(&self, what: &str, e: redis::RedisError) -> CoordinatorError {
        if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
            *self.shared() = None;
        }
        unavailable(what, e)
    }

    pub(super) fn key(&self, kind: &str, name: &str) -> String {
        format!("{}:{kind}:{name}", self.ns)
    }

    pub(super) fn member_prefix(&self) -> String {
        format!("{}:m:", self.ns)
    }

    /// The set of member ids, cleaned lazily when a listing finds a record gone.
    pub(super) fn member_set(&self) -> String {
        format!("{}:members", self.ns)
    }

    pub(super) fn channel(&self, name: &str) -> String {
        format!("{}:ev:{name}", self.ns)
    }
}
