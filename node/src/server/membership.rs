//! The node's membership in the fleet: joined at start, kept alive by heartbeats.

use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_coordinator::{Coordinator, CoordinatorError, CoordinatorSettings, Member};

use crate::counted::Counted;
use crate::metrics::Metrics;
use tokio::sync::watch;

/// How long a starting node keeps trying a coordinator that is unavailable (a NATS cluster
/// still electing its streams' leaders, a Redis not up yet) before it gives up and exits.
pub(super) const JOIN_PATIENCE: Duration = Duration::from_secs(30);

/// Connects to the coordinator and joins the fleet, trying both again every half second while
/// the coordinator is unavailable, up to `patience`. Any other refusal (a bad URL, an
/// invalid member) ends at once.
pub(super) async fn join_fleet(
    url: &str,
    settings: CoordinatorSettings,
    member: &Member,
    metrics: &Arc<Metrics>,
    patience: Duration,
) -> Result<Arc<dyn Coordinator>, CoordinatorError> {
    let deadline = Instant::now() + patience;
    loop {
        let joined = async {
            let coordinator = atrium_coordinator::connect(url, settings).await?;
            let coordinator: Arc<dyn Coordinator> =
                Arc::new(Counted::new(coordinator, metrics.clone()));
            coordinator.join(member.clone()).await?;
            Ok(coordinator)
        };
        match joined.await {
            Err(CoordinatorError::Unavailable(why)) if Instant::now() < deadline => {
                tracing::warn!(error = %why, "the coordinator cannot take this node yet; trying again");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            done => return done,
        }
    }
}

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
