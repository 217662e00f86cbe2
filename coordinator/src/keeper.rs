//! Follows one lease in the background for as long as the node serves the file.

use std::future::Future;
use std::hash::BuildHasher;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};

use crate::{Coordinator, CoordinatorError, CoordinatorSettings, Lease};

/// Asked after a lapsed lease was taken back: whether the holder's claim still stands in the
/// document store (no other node raised the file's epoch since the holder took it).
pub type StillMine = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// Watches over a lease in a spawned task.
///
/// A lease hangs on its holder's membership, so keeping it costs nothing per file: the keeper
/// rewrites the lease's record every [`lease_refresh`](CoordinatorSettings::lease_refresh)
/// (so it never reaches the record lifetime) and checks it at once when the coordinator
/// reports a [rejoin](Coordinator::rejoins), the one moment a live node's leases can have
/// lapsed. Only `Lost` ends the keeper and flips [`lost`](Self::lost): a coordinator that is
/// merely unavailable is asked again every heartbeat interval, because the holder may keep
/// writing under its store epoch meanwhile (the fence, not the lease, keeps the data safe). A
/// lease that lapsed while nobody else took it (the node's membership lapsed in a coordinator
/// outage and it joined again) is taken back when a [`StillMine`] check was given and says the
/// store agrees, so a coordinator outage does not close every room.
/// [`release`](Self::release) hands the lease over at once; dropping the keeper releases it
/// in the background.
pub struct LeaseKeeper {
    coordinator: Arc<dyn Coordinator>,
    current: Arc<Mutex<Lease>>,
    still_mine: Arc<Mutex<Option<StillMine>>>,
    lost: watch::Receiver<bool>,
    check: Arc<Notify>,
    task: JoinHandle<()>,
    released: bool,
}

impl LeaseKeeper {
    /// Starts watching over `lease` with the fleet's timing. Needs a Tokio runtime.
    pub fn start(
        coordinator: Arc<dyn Coordinator>,
        lease: Lease,
        settings: CoordinatorSettings,
    ) -> Self {
        let current = Arc::new(Mutex::new(lease));
        let still_mine = Arc::new(Mutex::new(None));
        let (lost_tx, lost) = watch::channel(false);
        let check = Arc::new(Notify::new());
        let task = tokio::spawn(keep(
            coordinator.clone(),
            current.clone(),
            still_mine.clone(),
            lost_tx,
            (settings, check.clone()),
        ));
        Self {
            coordinator,
            current,
            still_mine,
            lost,
            check,
            task,
            released: false,
        }
    }

    /// From now on a lapsed lease is taken back when `check` says the store still agrees
    /// (without it, a lapsed lease is simply lost). Give it once the store epoch is known.
    pub fn retake_when(&self, check: StillMine) {
        *self
            .still_mine
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(check);
    }

    /// Checks the lease at once (the node heard that the file changed hands): a lease another
    /// node took is then reported lost without waiting for the next refresh.
    pub fn check_now(&self) {
        self.check.notify_one();
    }

    /// Turns `true` once the lease is known to be lost; the node should then close the room.
    pub fn lost(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    /// The lease as last confirmed.
    pub fn lease(&self) -> Lease {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops watching and releases the lease so a successor can take the file at once.
    pub async fn release(mut self) -> Result<(), CoordinatorError> {
        // A renewal cut short here is harmless: release matches on the epoch.
        self.task.abort();
        self.released = true;
        let lease = self.lease();
        self.coordinator.release(&lease).await
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
        if self.released {
            return;
        }
        // The lease would stay held for as long as this node lives: give it up.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (coordinator, lease) = (self.coordinator.clone(), self.lease());
            runtime.spawn(async move { coordinator.release(&lease).await });
        }
    }
}

/// The keeper's task: a check every `lease_refresh`, after every rejoin, when asked
/// ([`LeaseKeeper::check_now`]), and every heartbeat interval while the coordinator does not
/// answer.
async fn keep(
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
