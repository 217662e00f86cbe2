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

/// Most bytes of patches (as text) in one room's hands at once: waiting in its queue, or
/// taken and not yet durable and sent.
pub const INBOUND_BYTES: usize = 1024 * 1024;

impl Inbound {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            bytes: AtomicUsize::new(0),
            drained: tokio::sync::Notify::new(),
        })
    }

    /// Waits until the room has room for `bytes` more (one patch always fits
    /// into an empty queue), then counts them until the ticket is dropped.
    pub async fn admit(self: &Arc<Self>, bytes: usize) -> Ticket {
        loop {
            let drained = self.drained.notified();
            let now = self.bytes.load(Ordering::Acquire);
            if now == 0 || now + bytes <= INBOUND_BYTES {
                self.bytes.fetch_add(bytes, Ordering::AcqRel);
                return Ticket {
                    inbound: self.clone(),
                    bytes,
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
}

impl Ticket {
    /// A ticket of no room's queue, for driving a room core by hand.
    #[cfg(test)]
    pub fn detached() -> Ticket {
        Ticket {
            inbound: Inbound::new(),
            bytes: 0,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.inbound.bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        self.inbound.drained.notify_waiters();
    }
}
