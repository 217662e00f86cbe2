//! The bounded queue of patches on their way into a room.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of patches on their way into a room, bounded: a socket waits (and stops
/// reading) while the room is this far behind, so parsed patches never pile up in
/// its queue faster than it applies them.
pub struct Inbound {
    bytes: AtomicUsize,
    drained: tokio::sync::Notify,
}

/// Most bytes of large patches (as text) in one room's hands at once: waiting in its
/// queue, or taken and not yet durable and sent.
pub const INBOUND_BYTES: usize = 1024 * 1024;

pub use crate::memory::SMALL_PATCH;

/// Room kept for small patches above [`INBOUND_BYTES`]: large patches never take it, so
/// editors pasting megabytes (a guest with the edit link, say) keep everyday edits
/// waiting for the room to apply what is ahead of them, never for whole cycles of
/// large patches to become durable.
pub const SMALL_LANE_BYTES: usize = 64 * 1024;

impl Inbound {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            bytes: AtomicUsize::new(0),
            drained: tokio::sync::Notify::new(),
        })
    }

    /// Waits until the room has room for `bytes` more (one patch always fits
    /// into an empty queue; a small one also into the small lane), then counts them
    /// until the ticket is dropped.
    pub async fn admit(self: &Arc<Self>, bytes: usize) -> Ticket {
        let limit = if bytes <= SMALL_PATCH {
            INBOUND_BYTES + SMALL_LANE_BYTES
        } else {
            INBOUND_BYTES
        };
        loop {
            let drained = self.drained.notified();
            let now = self.bytes.load(Ordering::Acquire);
            if now == 0 || now + bytes <= limit {
                self.bytes.fetch_add(bytes, Ordering::AcqRel);
                return Ticket {
                    inbound: self.clone(),
                    bytes,
                    parse: None,
                };
            }
            drained.await;
        }
    }
}

/// A patch's place in its room's inbound bytes; given back once it is refused, or durable
/// and sent.
pub struct Ticket {
    inbound: Arc<Inbound>,
    bytes: usize,
    /// What the patch's parse may cost, promised from the memory budget until then.
    parse: Option<crate::memory::ParseCost>,
}

impl Ticket {
    /// A ticket of no room's queue, for driving a room core by hand.
    #[cfg(test)]
    pub fn detached() -> Ticket {
        Ticket {
            inbound: Inbound::new(),
            bytes: 0,
            parse: None,
        }
    }

    /// Keeps the patch's parse cost promised until the patch is applied or refused.
    pub fn hold(&mut self, parse: crate::memory::ParseCost) {
        self.parse = Some(parse);
    }

    /// The patch is applied: its parsed ops go, and with them the promise for their parse.
    pub fn parsed(&mut self) {
        self.parse = None;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.inbound.bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        self.inbound.drained.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[test]
    fn large_patches_wait_for_room_and_small_ones_pass_them() {
        let inbound = Inbound::new();
        let big = inbound
            .admit(INBOUND_BYTES - 1000)
            .now_or_never()
            .expect("fits");
        assert!(
            inbound.admit(SMALL_PATCH + 1).now_or_never().is_none(),
            "a large patch waits while the room is full"
        );
        // Everyday edits are not held behind the large ones' cycle.
        let small: Vec<Ticket> = (0..SMALL_LANE_BYTES / SMALL_PATCH)
            .map(|_| {
                inbound
                    .admit(SMALL_PATCH)
                    .now_or_never()
                    .expect("the small lane")
            })
            .collect();
        assert!(
            inbound.admit(SMALL_PATCH).now_or_never().is_none(),
            "the small lane is bounded too"
        );
        drop(small);
        drop(big);
        assert!(inbound.admit(INBOUND_BYTES).now_or_never().is_some());
    }

    #[test]
    fn one_patch_always_fits_an_empty_room() {
        let inbound = Inbound::new();
        assert!(inbound.admit(10 * INBOUND_BYTES).now_or_never().is_some());
    }
}
