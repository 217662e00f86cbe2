//! Bytes promised to one piece of work before it allocates them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::MemoryGuard;

/// Bytes promised to one piece of work; given back when dropped.
pub struct Reservation {
    guard: Arc<MemoryGuard>,
    bytes: u64,
}

impl Reservation {
    /// Keeps the promise until two growth periods of samples have passed, so that one
    /// includes the allocation it was made for. Counted in samples, not time: under a
    /// loaded CPU the sampler runs late, and a promise kept for a fixed 300 ms ended
    /// before any sample saw the parse it was for, letting a second 30 MiB parse in
    /// (a suite run peaked at 136 MiB resident with a budget of 128).
    pub fn hold_until_sampled(mut self) {
        let bytes = std::mem::take(&mut self.bytes);
        // Counted as growth first, so what is expected never dips between the two.
        self.guard.grew(bytes);
        self.guard.reserved.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// Promises more, up to `bytes` in all, if the budget has room for the difference;
    /// false (and nothing more promised) when it has not.
    pub fn grow_to(&mut self, bytes: u64) -> bool {
        if bytes <= self.bytes {
            return true;
        }
        let more = bytes - self.bytes;
        if !self.guard.promise(more) {
            return false;
        }
        self.bytes = bytes;
        true
    }

    /// Gives back what is promised beyond `bytes`: work that now knows how much it takes
    /// leaves the rest to others at once.
    pub fn shrink_to(&mut self, bytes: u64) {
        if bytes < self.bytes {
            self.guard
                .reserved
                .fetch_sub(self.bytes - bytes, Ordering::AcqRel);
            self.bytes = bytes;
        }
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
        self.promise(bytes).then(|| Reservation {
            guard: self.clone(),
            bytes,
        })
    }

    /// Adds `bytes` to what is promised if they fit under the high-water mark; whoever
    /// promised them gives them back.
    pub(super) fn promise(&self, bytes: u64) -> bool {
        let high = self.high_water();
        let base = self.sampled_and_grown();
        self.reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                (base + r + bytes <= high).then_some(r + bytes)
            })
            .is_ok()
    }
}
