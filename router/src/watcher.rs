//! Keeps the router's [`Fleet`] in step with the coordinator by watching it: membership from
//! `MembersChanged`, lease holders from `LeaseChanged`. Requests never wait on the coordinator.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use atrium_coordinator::{Coordinator, CoordinatorEvent, CoordinatorSettings, Member};
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use tokio::sync::broadcast::error::RecvError;

use crate::fleet::{Fleet, Node};
use crate::metrics::Metrics;

/// Pause between attempts when the coordinator cannot be reached.
const RETRY: Duration = Duration::from_secs(1);

/// The coordinator connection, shared with the proxy for its rare direct questions.
pub type SharedCoordinator = Arc<OnceLock<Arc<dyn Coordinator>>>;

/// The background service that feeds the fleet view.
pub struct Watcher {
    pub url: String,
    pub settings: CoordinatorSettings,
    pub fleet: Arc<Fleet>,
    pub metrics: Arc<Metrics>,
    pub coordinator: SharedCoordinator,
}

#[async_trait]
impl BackgroundService for Watcher {
    async fn start(&self, _shutdown: ShutdownWatch) {
        // Runs until the process exits: a draining router still routes its in-flight work.
        let coordinator = self.connect().await;
        let _ = self.coordinator.set(coordinator.clone());
        loop {
            self.follow(coordinator.as_ref()).await;
            tokio::time::sleep(RETRY).await;
        }
    }
}

impl Watcher {
    async fn connect(&self) -> Arc<dyn Coordinator> {
        loop {
            match atrium_coordinator::connect(&self.url, self.settings).await {
                Ok(c) => {
                    tracing::info!("connected to the coordinator");
                    return c;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot reach the coordinator; retrying");
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }

    /// Watches until the event stream ends or fails.
    async fn follow(&self, coordinator: &dyn Coordinator) {
        let mut events = match coordinator.watch().await {
            Ok(rx) => rx,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the coordinator; retrying");
                return;
            }
        };
        // Events after `watch` are delivered; read the membership once in case the first
        // announcement went out before we subscribed.
        self.reread(coordinator).await;
        loop {
            match events.recv().await {
                Ok(CoordinatorEvent::MembersChanged(members)) => self.apply(members).await,
                Ok(CoordinatorEvent::LeaseChanged { file, holder }) => {
                    self.metrics.lease_events.inc();
                    self.fleet.set_holder(&file, holder);
                    self.metrics.holders.set(self.fleet.holders_known() as i64);
                }
                Ok(CoordinatorEvent::Message { .. }) => {}
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "fell behind the coordinator's events");
                    self.reread(coordinator).await;
                }
                Err(RecvError::Closed) => {
                    tracing::warn!("the coordinator's event stream ended; watching again");
                    return;
                }
            }
        }
    }

    async fn reread(&self, coordinator: &dyn Coordinator) {
        match coordinator.members().await {
            Ok(members) => self.apply(members).await,
            Err(e) => tracing::warn!(error = %e, "cannot list members"),
        }
    }

    async fn apply(&self, members: Vec<Member>) {
        let mut nodes = Vec::with_capacity(members.len());
        for m in members {
            match resolve(&m.address).await {
                Some(addr) => nodes.push(Node {
                    id: m.id,
                    addr,
                    address: m.address,
                    draining: m.draining,
                }),
                None => tracing::warn!(node = %m.id, address = %m.address,
                    "cannot resolve a member's address; not routing to it"),
            }
        }
        if self.fleet.set_members(nodes) {
            self.metrics.membership_changes.inc();
            tracing::info!(
                live = self.fleet.live_count(),
                ring = self.fleet.ring_size(),
                "membership changed"
            );
        }
        self.metrics
            .live_members
            .set(self.fleet.live_count() as i64);
        self.metrics.ring_members.set(self.fleet.ring_size() as i64);
        self.metrics.holders.set(self.fleet.holders_known() as i64);
    }
}

/// A member's advertised address (`host:port`, optionally with `http://`) as a socket address.
async fn resolve(address: &str) -> Option<SocketAddr> {
    let hostport = address
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/');
    if let Ok(addr) = hostport.parse::<SocketAddr>() {
        return Some(addr);
    }
    let lookup = tokio::net::lookup_host(hostport);
    match tokio::time::timeout(Duration::from_secs(2), lookup).await {
        Ok(Ok(mut addrs)) => addrs.next(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
