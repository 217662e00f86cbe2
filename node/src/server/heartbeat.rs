//! The node's membership in the fleet, kept alive by heartbeats.

use std::sync::Arc;

use atrium_coordinator::{Coordinator, CoordinatorError, Member};
use tokio::sync::watch;

/// Keeps this node's membership alive; on shutdown, marks it draining.
pub(super) async fn heartbeat_loop(
    coordinator: Arc<dyn Coordinator>,
    member: Member,
    every: std::time::Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => {
                let _ = coordinator.heartbeat(&member.id, true).await;
                return;
            }
            _ = ticks.tick() => {
                match coordinator.heartbeat(&member.id, false).await {
                    Ok(()) => {}
                    Err(CoordinatorError::Lost) => {
                        tracing::warn!("membership lapsed; joining again");
                        let _ = coordinator.join(member.clone()).await;
                    }
                    Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
                }
            }
        }
    }
}
