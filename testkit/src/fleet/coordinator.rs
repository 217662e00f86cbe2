//! A coordinator namespace of the test's own, and stand-in members the test announces in
//! it itself (a node that is only a listener, or one that died).

use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::{Coordinator, CoordinatorSettings, Member, NodeId};

use crate::env::secret;

/// `server` with a fresh namespace (`prefix` and 20 random hex digits) in place of any it
/// named, so tests and load runs sharing a server never meet.
pub fn namespaced(server: &str, prefix: &str) -> String {
    let (base, query) = server.split_once('?').unwrap_or((server, ""));
    let base = base.trim().trim_end_matches('/');
    // Other settings of the URL (a NATS cluster's `replicas`) stay.
    let kept: String = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("namespace="))
        .map(|p| format!("&{p}"))
        .collect();
    format!("{base}?namespace={prefix}{}{kept}", &secret()[..20])
}

/// A connection to a namespace of the test's own, with the timing of its lease time.
pub struct Namespace {
    pub url: String,
    pub settings: CoordinatorSettings,
    pub connection: Arc<dyn Coordinator>,
}

impl Namespace {
    /// A fresh namespace on `server` for a fleet whose lease time is `lease`.
    pub async fn create(server: &str, prefix: &str, lease: Duration) -> Namespace {
        let url = namespaced(server, prefix);
        let settings = CoordinatorSettings::from_lease(lease);
        let connection = atrium_coordinator::connect(&url, settings)
            .await
            .unwrap_or_else(|e| panic!("cannot reach the coordinator at {server}: {e}"));
        Namespace {
            url,
            settings,
            connection,
        }
    }

    /// Announces `id` as a member at `127.0.0.1:port`; it lapses one lease time later
    /// unless it [heartbeats](Namespace::heartbeat).
    pub async fn announce(&self, id: &NodeId, port: u16) {
        let member = Member {
            id: id.clone(),
            address: format!("127.0.0.1:{port}"),
            draining: false,
        };
        self.connection
            .join(member)
            .await
            .unwrap_or_else(|e| panic!("announce {id}: {e}"));
    }

    /// Keeps `id`'s membership alive until the returned [`Heartbeat`] is dropped.
    pub fn heartbeat(&self, id: NodeId) -> Heartbeat {
        let (coordinator, every) = (self.connection.clone(), self.settings.heartbeat);
        Heartbeat(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let _ = coordinator.heartbeat(&id, false).await;
            }
        }))
    }
}

/// A stand-in member's heartbeats; they stop when this is dropped.
pub struct Heartbeat(tokio::task::JoinHandle<()>);

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
#[test]
fn a_namespace_of_its_own_replaces_any_the_server_named() {
    for server in [
        "nats://127.0.0.1:4222/",
        "nats://127.0.0.1:4222?namespace=prod",
    ] {
        let url = namespaced(server, "lt1");
        let (base, namespace) = url.split_once("?namespace=").expect("a namespace");
        assert_eq!(base, "nats://127.0.0.1:4222");
        assert!(
            namespace.starts_with("lt1") && namespace.len() == 23,
            "{url}"
        );
    }
}
