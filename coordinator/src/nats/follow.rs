//! Follows the members bucket into the [`View`] for as long as the coordinator lives.

use std::sync::Arc;

use async_nats::jetstream::kv;
use futures_util::StreamExt;
use tokio::sync::oneshot;
use tokio::time::{Instant, MissedTickBehavior};

use super::View;
use crate::events::Hub;
use crate::CoordinatorSettings;

/// Follows the members bucket for as long as the coordinator lives: the last record of each
/// key first, then every write and lapse marker.
pub(super) fn spawn(
    store: kv::Store,
    view: Arc<View>,
    hub: Arc<Hub>,
    settings: CoordinatorSettings,
    mut stop: oneshot::Receiver<()>,
) {
    tokio::spawn(async move {
        let started = Instant::now();
        let mut ticks = tokio::time::interval(settings.heartbeat);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let mut watch = match store.watch_with_history(">").await {
                Ok(w) => w,
                Err(_) => {
                    tokio::select! {
                        _ = &mut stop => return,
                        _ = tokio::time::sleep(settings.heartbeat) => continue,
                    }
                }
            };
            // An empty bucket delivers nothing to tell us the listing is complete.
            let mut stream = store.stream.clone();
            if stream.info().await.is_ok_and(|i| i.state.messages == 0) {
                view.mark_synced();
            }
            loop {
                tokio::select! {
                    _ = &mut stop => return,
                    entry = watch.next() => match entry {
                        Some(Ok(entry)) => {
                            let changed = view.apply(&entry);
                            if entry.delta == 0 {
                                view.mark_synced();
                            }
                            if changed {
                                view.announce(&hub, None);
                            }
                        }
                        Some(Err(_)) => continue,
                        // The consumer is gone: start over with a fresh listing.
                        None => break,
                    },
                    _ = ticks.tick() => {
                        if started.elapsed() >= settings.lease {
                            view.mark_synced();
                        }
                        view.expire(settings.lease + settings.lease / 2);
                        view.announce(&hub, Some(settings.lease));
                    }
                }
            }
        }
    });
}
