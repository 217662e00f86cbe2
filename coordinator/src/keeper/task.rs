//! The keeper's task: when it checks its lease, and what a check comes to.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::time::{sleep_until, Instant};

use super::StillMine;
use crate::{Coordinator, CoordinatorError, CoordinatorSettings, Lease};

/// The keeper's task: a check every `lease_refresh`, after every rejoin, when asked
/// ([`LeaseKeeper::check_now`]), and every heartbeat interval while the coordinator does not
/// answer.
pub(super) async fn keep(
    coordinator: Arc<dyn Coordinator>,
    current: Arc<Mutex<Lease>>,
    still_mine: Arc<Mutex<Option<StillMine>>>,
    lost: watch::Sender<bool>,
    (settings, asked): (CoordinatorSettings, Arc<Notify>),
) {
    let mut rejoins = Some(coordinator.rejoins());
    let file = current
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .file
        .clone();
    let mut next = Instant::now() + first_refresh(&file, settings.lease_refresh);
    loop {
        tokio::select! {
            _ = sleep_until(next) => {}
            _ = asked.notified() => {}
            changed = rejoined(&mut rejoins) => {
                if !changed {
                    // The coordinator is gone; the periodic check remains.
                    rejoins = None;
                    continue;
                }
            }
        }
        let lease = current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let checked = match coordinator.renew(&lease).await {
            Err(CoordinatorError::Lost) => {
                let check = still_mine
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                match check {
                    Some(check) => retake(&*coordinator, &lease, &check).await,
                    None => Check::Lost,
                }
            }
            Ok(renewed) => Check::Kept(renewed),
            // Unavailable (or anything else): ask again soon.
            Err(_) => Check::Later,
        };
        match checked {
            Check::Kept(l) => {
                *current.lock().unwrap_or_else(PoisonError::into_inner) = l;
                next = Instant::now() + settings.lease_refresh;
            }
            Check::Later => next = Instant::now() + settings.heartbeat,
            Check::Lost => {
                lost.send_replace(true);
                return;
            }
        }
    }
}

/// Resolves when the coordinator reports a rejoin (`true`) or is gone (`false`); never while
/// there is nothing to watch.
async fn rejoined(rejoins: &mut Option<watch::Receiver<u64>>) -> bool {
    match rejoins {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// The first rewrite comes after between half of and the whole refresh interval, at a moment
/// drawn at random (a freshly keyed hash of the file), so leases taken together (a failover)
/// are not rewritten together.
fn first_refresh(file: &str, refresh: Duration) -> Duration {
    let spread = std::collections::hash_map::RandomState::new().hash_one(file) % 1024;
    refresh / 2 + refresh / 2 * spread as u32 / 1024
}

/// What one check came to.
enum Check {
    /// Confirmed, or taken back after it lapsed.
    Kept(Lease),
    /// The coordinator did not answer: ask again soon.
    Later,
    Lost,
}

/// Takes a lapsed lease back: only while nobody else holds it, and only if the store says no
/// other node took the file meanwhile (else it is given back at once).
async fn retake(coordinator: &dyn Coordinator, lapsed: &Lease, still_mine: &StillMine) -> Check {
    match coordinator.acquire(&lapsed.file, &lapsed.node).await {
        Ok(lease) => {
            if still_mine().await {
                Check::Kept(lease)
            } else {
                let _ = coordinator.release(&lease).await;
                Check::Lost
            }
        }
        // Not a member this moment (its heartbeat is joining again), or no answer.
        Err(CoordinatorError::Unavailable(_) | CoordinatorError::Lost) => Check::Later,
        Err(_) => Check::Lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_rewrites_spread_over_the_second_half_of_the_interval() {
        let refresh = Duration::from_secs(3600);
        let firsts: Vec<Duration> = (0..200)
            .map(|i| first_refresh(&format!("file-{i}"), refresh))
            .collect();
        assert!(firsts.iter().all(|d| *d >= refresh / 2 && *d <= refresh));
        let early = firsts.iter().filter(|d| **d < refresh * 3 / 4).count();
        assert!(
            (40..160).contains(&early),
            "{early} of 200 in the first quarter"
        );
    }
}
