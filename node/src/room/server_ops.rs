//! Forgetting server API op ids once `ATRIUM_SERVER_OP_TTL_MS` has passed: every node
//! deletes the expired ones now and then (deleting twice is harmless), so the store keeps
//! at most a day's worth (by default) of server patches' ids.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::store::Store;

/// How often expired op ids are deleted: a twelfth of their lifetime, from a minute to an
/// hour.
fn sweep_every(ttl_ms: u64) -> Duration {
    Duration::from_millis(ttl_ms / 12).clamp(Duration::from_secs(60), Duration::from_secs(3600))
}

pub async fn run(store: Arc<dyn Store>, ttl_ms: u64, mut stopping: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(sweep_every(ttl_ms));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {
                let before = crate::clock::unix_ms().saturating_sub(ttl_ms as i64);
                match store.prune_server_ops(before).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(forgotten = n, "expired server op ids deleted"),
                    Err(e) => tracing::warn!(error = %e, "could not delete expired server op ids"),
                }
            }
            _ = stopping.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_come_between_a_minute_and_an_hour_apart() {
        assert_eq!(sweep_every(24 * 3_600_000), Duration::from_secs(3600));
        assert_eq!(sweep_every(1_000), Duration::from_secs(60));
        assert_eq!(sweep_every(12 * 600_000), Duration::from_secs(600));
    }
}
