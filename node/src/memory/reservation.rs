//! Bytes promised to one piece of work before it allocates them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{MemoryGuard, SAMPLE_EVERY};

/// Bytes promised to one piece of work; given back when dropped.
pub struct Reservation {
    guard: Arc<MemoryGuard>,
    bytes: u64,
}

impl Reservation {
    /// Keeps the promise a little longer, until resident memory samples include
    /// the allocation it was made for.
    pub fn hold_until_sampled(self) {
        tokio::spawn(async move {
            tokio::time::sleep(SAMPLE_EVERY * 3).await;
            drop(self);
        });
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.guard.reserved.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl MemoryGuard {
    /// Promises `bytes` to a piece of work if the budget has room for them.
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let high = self.high_water();
        let base = self.sampled_and_grown();
        self.reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                (base + r + bytes <= high).then_some(r + bytes)
            })
            .ok()
            .map(|_| Reservation {
                guard: self.clone(),
                bytes,
            })
    }
}
