//! Keeps one lease alive in the background for as long as the node serves the file.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{interval_at, Instant, MissedTickBehavior};

use crate::{Coordinator, CoordinatorError, Lease};

/// Renews a lease every `every` (the heartbeat interval) in a spawned task.
///
/// Only `Lost` ends the renewals and flips [`lost`](Self::lost): a coordinator that is merely
/// unavailable is retried at the next tick, because the holder may keep writing under its
/// store epoch meanwhile (the fence, not the lease, keeps the data safe). Dropping the keeper
/// stops renewing and lets the lease lapse; [`release`](Self::release) hands it over at once.
pub struct LeaseKeeper {
    coordinator: Arc<dyn Coordinator>,
    current: Arc<Mutex<Lease>>,
    lost: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl LeaseKeeper {
    /// Starts renewing `lease`, first one interval from now. Needs a Tokio runtime.
    pub fn start(coordinator: Arc<dyn Coordinator>, lease: Lease, every: Duration) -> Self {
        let current = Arc::new(Mutex::new(lease));
        let (lost_tx, lost) = watch::channel(false);
        let task = tokio::spawn(renew_loop(
            coordinator.clone(),
            current.clone(),
            lost_tx,
            every,
        ));
        Self {
            coordinator,
            current,
            lost,
            task,
        }
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
        match coordinator.renew(&lease).await {
            Ok(renewed) => *current.lock().unwrap_or_else(PoisonError::into_inner) = renewed,
            Err(CoordinatorError::Lost) => {
                lost.send_replace(true);
                return;
            }
            // Unavailable (or anything else): try again next tick.
            Err(_) => {}
        }
    }
}
