//! Keeps one lease alive in the background for as long as the node serves the file.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{interval_at, Instant, MissedTickBehavior};

use crate::{Coordinator, CoordinatorError, Lease};

/// Asked after a lapsed lease was taken back: whether the holder's claim still stands in the
/// document store (no other node raised the file's epoch since the holder took it).
pub type StillMine = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// Renews a lease every `every` (the heartbeat interval) in a spawned task.
///
/// Only `Lost` ends the renewals and flips [`lost`](Self::lost): a coordinator that is merely
/// unavailable is retried at the next tick, because the holder may keep writing under its
/// store epoch meanwhile (the fence, not the lease, keeps the data safe). A lease that lapsed
/// while nobody else took it (the coordinator was down for longer than the lease, or restarted
/// without it) is taken back when a [`StillMine`] check was given and says the store agrees, so
/// a coordinator outage does not close every room. Dropping the keeper stops renewing and lets
/// the lease lapse; [`release`](Self::release) hands it over at once.
pub struct LeaseKeeper {
    coordinator: Arc<dyn Coordinator>,
    current: Arc<Mutex<Lease>>,
    still_mine: Arc<Mutex<Option<StillMine>>>,
    lost: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl LeaseKeeper {
    /// Starts renewing `lease`, first one interval from now. Needs a Tokio runtime.
    pub fn start(coordinator: Arc<dyn Coordinator>, lease: Lease, every: Duration) -> Self {
        let current = Arc::new(Mutex::new(lease));
        let still_mine = Arc::new(Mutex::new(None));
        let (lost_tx, lost) = watch::channel(false);
        let task = tokio::spawn(renew_loop(
            coordinator.clone(),
            current.clone(),
            still_mine.clone(),
            lost_tx,
            every,
        ));
        Self {
            coordinator,
            current,
            still_mine,
            lost,
            task,
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

    /// Turns `true` once the lease is known to be lost; the node should then close the room.
    pub fn lost(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    /// The lease as last renewed.
    pub fn lease(&self) -> Lease {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops renewing and releases the lease so a successor can take the file at once.
    pub async fn release(self) -> Result<(), CoordinatorError> {
        // A renewal cut short here is harmless: release matches on the epoch, not the expiry.
        self.task.abort();
        let lease = self.lease();
        self.coordinator.release(&lease).await
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn renew_loop(
    coordinator: Arc<dyn Coordinator>,
    current: Arc<Mutex<Lease>>,
    still_mine: Arc<Mutex<Option<StillMine>>>,
    lost: watch::Sender<bool>,
    every: Duration,
) {
    let mut ticks = interval_at(Instant::now() + every, every);
    // After a stall, renew once and carry on from there rather than in a burst.
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let lease = current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let renewed = match coordinator.renew(&lease).await {
            Err(CoordinatorError::Lost) => {
                let check = still_mine
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                match check {
                    Some(check) => retake(&*coordinator, &lease, &check).await,
                    None => Renewal::Lost,
                }
            }
            Ok(renewed) => Renewal::Kept(renewed),
            // Unavailable (or anything else): try again next tick.
            Err(_) => Renewal::Later,
        };
        match renewed {
            Renewal::Kept(l) => *current.lock().unwrap_or_else(PoisonError::into_inner) = l,
            Renewal::Later => {}
            Renewal::Lost => {
                lost.send_replace(true);
                return;
            }
        }
    }
}

/// What one renewal came to.
enum Renewal {
    /// Renewed, or taken back after it lapsed.
    Kept(Lease),
    /// The coordinator did not answer: try again next tick.
    Later,
    Lost,
}

/// Takes a lapsed lease back: only while nobody else holds it, and only if the store says no
/// other node took the file meanwhile (else it is given back at once).
async fn retake(coordinator: &dyn Coordinator, lapsed: &Lease, still_mine: &StillMine) -> Renewal {
    match coordinator.acquire(&lapsed.file, &lapsed.node).await {
        Ok(lease) => {
            if still_mine().await {
                Renewal::Kept(lease)
            } else {
                let _ = coordinator.release(&lease).await;
                Renewal::Lost
            }
        }
        Err(CoordinatorError::Unavailable(_)) => Renewal::Later,
        Err(_) => Renewal::Lost,
    }
}
