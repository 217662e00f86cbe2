//! Follows one lease in the background for as long as the node serves the file.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::{Coordinator, CoordinatorError, CoordinatorSettings, Lease};

mod task;

use task::keep;

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
