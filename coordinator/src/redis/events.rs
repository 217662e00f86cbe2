//! Watching: the scripts publish membership changes and lease hand-overs on `{ns}:ev:*`,
//! fleet messages go to `{ns}:msg:{topic}`, and a ticker lists the members every heartbeat
//! interval, since a lapsed key is silent.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::broadcast;

use super::Inner;
use crate::events::spawn_members_ticker;
use crate::record::unavailable;
use crate::types::check_key;
use crate::{CoordinatorEvent, NodeId, Result};

impl Inner {
    pub(super) async fn watch(self: &Arc<Self>) -> Result<broadcast::Receiver<CoordinatorEvent>> {
        let rx = self.hub.subscribe();
        self.watching
            .get_or_try_init(|| self.start_watching())
            .await?;
        // A new watcher hears the membership at once, not only at the next change.
        self.announce_members(Some(Duration::ZERO)).await;
        Ok(rx)
    }

    pub(super) async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<()> {
        check_key("topic", topic)?;
        let mut conn = self.conn().await?;
        redis::cmd("PUBLISH")
            .arg(format!("{}:msg:{topic}", self.ns))
            .arg(payload)
            .query_async::<i64>(&mut conn)
            .await
            .map_err(|e| self.failed("redis publish", e))?;
        Ok(())
    }

    /// Subscribes to the namespace's channels and turns what arrives into events; a lost
    /// connection is made again (events meanwhile are missed; the members listing catches up).
    async fn subscribe(self: &Arc<Self>) -> Result<redis::aio::PubSub> {
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

    async fn start_watching(self: &Arc<Self>) -> Result<()> {
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
