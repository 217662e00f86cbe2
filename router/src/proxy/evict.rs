//! Ending the membership of a node found dead. A connection to a node's address that is
//! refused means nothing listens there: the process died (or closed its listener to stop).
//! Waiting out its lease would leave its files unserved for the lease time, so the router
//! tries once more a moment later and, refused again, asks the coordinator to end the
//! membership; the node's files then move to their successors at once. A node that was
//! alive after all loses its leases and joins again; the document store's epoch fences
//! whatever it still writes under the old ones, so nothing acked is lost either way.
//!
//! A node that does not answer at all (a cut link, a lost machine) is not evicted: that
//! looks the same as a slow one, and its membership lapses on its own.

use std::collections::HashSet;
use std::io::ErrorKind;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use atrium_coordinator::NodeId;
use tokio::net::TcpStream;

use super::Router;
use crate::fleet::Node;

/// How long after the first refusal the second try is made: long enough for a restart's
/// listener to be back, short against the lease time.
const SECOND_TRY_AFTER: Duration = Duration::from_millis(100);

/// Which nodes are being checked now, so a burst of refused requests checks each once.
pub struct Evictions {
    enabled: bool,
    checking: Mutex<HashSet<NodeId>>,
}

impl Evictions {
    pub fn new(enabled: bool) -> Arc<Self> {
        Arc::new(Self {
            enabled,
            checking: Mutex::default(),
        })
    }

    /// `true` if nobody was checking `node` and the caller now does.
    fn begin(&self, node: &NodeId) -> bool {
        self.enabled && self.checking().insert(node.clone())
    }

    fn end(&self, node: &NodeId) {
        self.checking().remove(node);
    }

    fn checking(&self) -> std::sync::MutexGuard<'_, HashSet<NodeId>> {
        self.checking.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Router {
    /// A connection to `node` was refused: checks it once more in the background and, if it
    /// still refuses, ends its membership. Draining members are left to finish their drain.
    pub(super) fn refused(&self, node: &NodeId) {
        let Some(member) = self.fleet.member(node).filter(|m| !m.draining) else {
            return;
        };
        if !self.evictions.begin(node) {
            return;
        }
        let router = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(SECOND_TRY_AFTER).await;
            let outcome = router.evict_if_refused(&member).await;
            router.metrics.evictions.with_label_values(&[outcome]).inc();
            router.evictions.end(&member.id);
        });
    }

    /// Tries `member` once more; ends its membership when refused again. Returns the outcome
    /// (a metric label).
    async fn evict_if_refused(&self, member: &Node) -> &'static str {
        match tokio::time::timeout(self.timeouts.connect, TcpStream::connect(member.addr)).await {
            Ok(Err(e)) if e.kind() == ErrorKind::ConnectionRefused => {}
            Ok(Ok(_)) => return "answered",
            _ => return "unreachable",
        }
        let Some(coordinator) = self.coordinator.get() else {
            return "failed";
        };
        match coordinator.evict(&member.id, &member.address).await {
            Ok(true) => {
                tracing::warn!(node = %member.id, address = %member.address,
                    "a node refused connections twice: its membership is ended and its files move");
                self.fleet.forget(&member.id);
                "evicted"
            }
            Ok(false) => "kept",
            Err(e) => {
                tracing::warn!(node = %member.id, error = %e, "could not end a dead node's membership");
                "failed"
            }
        }
    }
}
