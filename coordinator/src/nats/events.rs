//! What watchers hear beyond the membership: lease hand-overs, followed in the leases
//! bucket, and fleet messages, sent on the core subject `{ns}.msg` with the topic in a header.
//! Both subscriptions start with the instance's first `watch`.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_nats::jetstream::kv::{self, Entry, Operation};
use futures_util::StreamExt;
use tokio::sync::broadcast;

use super::Inner;
use crate::events::Hub;
use crate::keys::{decode, encode};
use crate::record::{unavailable, LeaseRecord};
use crate::types::check_key;
use crate::{CoordinatorEvent, NodeId, Result};

/// The header carrying a fleet message's topic.
const TOPIC_HEADER: &str = "Atrium-Topic";

impl Inner {
    pub(super) async fn watch(&self) -> Result<broadcast::Receiver<CoordinatorEvent>> {
        let rx = self.hub.subscribe();
        self.watching
            .get_or_try_init(|| subscribe(&self.leases, &self.client, &self.ns, &self.hub))
            .await?;
        // A new watcher hears the membership at once, not only at the next change.
        if self.view.wait_synced(self.settings.lease).await.is_ok() {
            self.view.announce(&self.hub, Some(Duration::ZERO));
        }
        Ok(rx)
    }

    pub(super) async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<()> {
        check_key("topic", topic)?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(TOPIC_HEADER, encode(topic).as_str());
        self.client
            .publish_with_headers(format!("{}.msg", self.ns), headers, payload.into())
            .await
            .map_err(|e| unavailable("nats publish", e))?;
        self.client
            .flush()
            .await
            .map_err(|e| unavailable("nats publish", e))
    }
}

/// Starts following lease hand-overs and fleet messages; returns once both subscriptions
/// are in place at the server, so events after `watch` returns are seen.
async fn subscribe(
    leases: &kv::Store,
    client: &async_nats::Client,
    ns: &str,
    hub: &Arc<Hub>,
) -> Result<()> {
    let mut leases = leases
        .watch_all()
        .await
        .map_err(|e| unavailable("nats watch leases", e))?;
    let mut messages = client
        .subscribe(format!("{ns}.msg"))
        .await
        .map_err(|e| unavailable("nats subscribe", e))?;
    client
        .flush()
        .await
        .map_err(|e| unavailable("nats subscribe", e))?;
    let hub: Weak<Hub> = Arc::downgrade(hub);
    tokio::spawn(async move {
        // Holders as last announced, so renewals (a write each) are not announced.
        let mut holders: HashMap<String, String> = HashMap::new();
        loop {
            let event = tokio::select! {
                entry = leases.next() => match entry {
                    Some(Ok(entry)) => lease_event(&mut holders, &entry),
                    Some(Err(_)) => None,
                    None => return,
                },
                msg = messages.next() => match msg {
                    Some(msg) => message_event(msg),
                    None => return,
                },
            };
            let Some(hub) = hub.upgrade() else { return };
            if let Some(event) = event {
                hub.send(event);
            }
        }
    });
    Ok(())
}

fn lease_event(holders: &mut HashMap<String, String>, entry: &Entry) -> Option<CoordinatorEvent> {
    let file = decode(&entry.key)?;
    let holder = match entry.operation {
        Operation::Put => {
            let record = LeaseRecord::parse(&entry.value)?;
            if holders.get(&file) == Some(&record.node) {
                return None;
            }
            holders.insert(file.clone(), record.node.clone());
            Some(NodeId::parse(&record.node).ok()?)
        }
        Operation::Delete | Operation::Purge => {
            holders.remove(&file);
            None
        }
    };
    Some(CoordinatorEvent::LeaseChanged { file, holder })
}

fn message_event(msg: async_nats::Message) -> Option<CoordinatorEvent> {
    let topic = msg.headers.as_ref()?.get(TOPIC_HEADER)?.as_str();
    Some(CoordinatorEvent::Message {
        topic: decode(topic)?,
        payload: msg.payload.to_vec(),
    })
}
