//! Opening a namespace's buckets (and the membership watch with them), and taking them down.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::context::ContextBuilder;
use async_nats::jetstream::kv;
use tokio::sync::{oneshot, watch, OnceCell};

use super::{follow, Inner, NatsCoordinator, View, BUCKET_ADMIN_TIMEOUT, MARKER_TTL};
use crate::events::Hub;
use crate::keys::check_namespace;
use crate::record::unavailable;
use crate::{CoordinatorSettings, Result, LEASE_RECORD_LIFETIME};

/// The buckets of a namespace; `connect` gives their records' lifetimes in this order.
const BUCKETS: [&str; 3] = ["members", "leases", "state"];

impl NatsCoordinator {
    /// Connects to `url` (`nats://host:port`, or a cluster's servers separated by commas, with
    /// an optional `?replicas=N`: `nats/servers.rs`), creates or updates the namespace's buckets
    /// to match `settings`, and starts watching the membership.
    pub async fn connect(url: &str, ns: &str, settings: CoordinatorSettings) -> Result<Self> {
        settings.validate()?;
        check_namespace(ns)?;
        let servers = super::servers::parse(url)?;
        let timeout = settings.heartbeat.max(Duration::from_millis(500));
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(timeout)
            .request_timeout(Some(timeout))
            .connect(servers.servers.as_slice())
            .await
            .map_err(|e| unavailable("nats connect", e))?;
        let js = ContextBuilder::new().timeout(timeout).build(client.clone());
        // Creating or deleting a stream writes to disk on the server and can take seconds on a
        // busy machine; only the hot path (leases, heartbeats) needs the short deadline.
        let admin = ContextBuilder::new()
            .timeout(timeout.max(BUCKET_ADMIN_TIMEOUT))
            .build(client.clone());
        let ages = [settings.lease, LEASE_RECORD_LIFETIME, Duration::ZERO];
        let mut stores = Vec::new();
        for (name, max_age) in BUCKETS.into_iter().zip(ages) {
            let config = kv::Config {
                bucket: format!("{ns}-{name}"),
                history: 1,
                max_age,
                limit_markers: Some(MARKER_TTL),
                num_replicas: servers.replicas,
                ..Default::default()
            };
            admin
                .create_or_update_key_value(config)
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
        follow::spawn(
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
    pub async fn lease_bucket_messages(&self) -> Result<u64> {
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
    pub async fn destroy(&self) -> Result<()> {
        let admin = ContextBuilder::new()
            .timeout(BUCKET_ADMIN_TIMEOUT)
            .build(self.inner.client.clone());
        for name in BUCKETS {
            let bucket = format!("{}-{name}", self.inner.ns);
            admin
                .delete_key_value(&bucket)
                .await
                .map_err(|e| unavailable("nats delete bucket", e))?;
        }
        Ok(())
    }
}
