//! The node-wide allowance for welcomes larger than a send queue.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A node-wide allowance for messages bigger than a send queue may hold (large
/// welcomes), so that a burst of joins to a big file cannot take all memory.
pub struct Budget {
    left: AtomicUsize,
}

impl Budget {
    pub fn new(bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicUsize::new(bytes),
        })
    }

    pub(super) fn take(&self, n: usize) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(n)
            })
            .is_ok()
    }

    pub(super) fn give(&self, n: usize) {
        self.left.fetch_add(n, Ordering::AcqRel);
    }
}
