//! Watching: an in-process broadcast, with the membership listed every heartbeat interval
//! from the first `watch` (lapses are noticed there), and fleet messages sent straight to it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::state::live_members;
use super::{lock, Inner};
use crate::events::spawn_members_ticker;
use crate::types::check_key;
use crate::{CoordinatorEvent, Result};

impl Inner {
    pub(super) async fn watch(&self) -> Result<broadcast::Receiver<CoordinatorEvent>> {
        let rx = self.hub.subscribe();
        if !self.ticking.swap(true, Ordering::AcqRel) {
            let (state, hub) = (Arc::downgrade(&self.state), self.hub.clone());
            let refresh = Some(self.settings.lease);
            spawn_members_ticker(self.settings, move || {
                let alive = state.upgrade().is_some_and(|state| {
                    // Announced under the lock, so a listing never overtakes a newer one.
                    let st = lock(&state);
                    hub.members(live_members(&st.members, Instant::now()), refresh);
                    true
                });
                std::future::ready(alive)
            });
        }
        // A new watcher hears the membership at once, not only at the next change.
        let members = live_members(&self.lock().members, Instant::now());
        self.hub.members(members, Some(Duration::ZERO));
        Ok(rx)
    }

    pub(super) async fn publish(&self, topic: &str, payload: Vec<u8>) -> Result<()> {
        check_key("topic", topic)?;
        self.hub.send(CoordinatorEvent::Message {
            topic: topic.to_owned(),
            payload,
        });
        Ok(())
    }
}
