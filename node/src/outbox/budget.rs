//! The node-wide allowance for messages larger than a send queue: welcomes of large
//! documents and the patches of restores of large versions, while they wait to be sent.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A node-wide allowance for messages bigger than a send queue may hold, so that a burst
/// of joins to a big file cannot take all memory; and a share of it per client address,
/// so that sockets of one address that never read their welcomes cannot hold all of it and
/// keep everyone else out of every large file.
pub struct Budget {
    left: AtomicUsize,
    /// What one address may hold at once, unless it holds nothing (one message of any size
    /// the budget has room for is always let through, or a large file could never be
    /// opened).
    share: usize,
    by_address: Mutex<HashMap<IpAddr, usize>>,
}

/// An address may hold this part of the budget at once.
const SHARE: usize = 8;

impl Budget {
    pub fn new(bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicUsize::new(bytes),
            share: bytes / SHARE,
            by_address: Mutex::new(HashMap::new()),
        })
    }

    /// Takes `n` bytes for a socket of `address` (by its limit key), if the budget and the
    /// address's share have room.
    pub(super) fn take(&self, address: Option<IpAddr>, n: usize) -> bool {
        let Some(address) = address else {
            return self.take_bytes(n);
        };
        let mut held = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        let mine = held.get(&address).copied().unwrap_or(0);
        if mine > 0 && mine + n > self.share {
            return false;
        }
        if !self.take_bytes(n) {
            return false;
        }
        held.insert(address, mine + n);
        true
    }

    fn take_bytes(&self, n: usize) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(n)
            })
            .is_ok()
    }

    pub(super) fn give(&self, address: Option<IpAddr>, n: usize) {
        self.left.fetch_add(n, Ordering::AcqRel);
        if let Some(address) = address {
            let mut held = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(mine) = held.get_mut(&address) {
                *mine = mine.saturating_sub(n);
                if *mine == 0 {
                    held.remove(&address);
                }
            }
        }
    }
}
