//! The node-wide allowance for messages larger than a send queue: welcomes of large
//! documents and the patches of restores of large versions, while they wait to be sent.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use atrium_protocol::CloseCode;

use super::Shared;

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
    /// The sockets that drew on it (some may have given back since): when a draw does not
    /// fit, those among them that took nothing for [`MAKE_WAY_AFTER`] are closed.
    holders: Mutex<Vec<Weak<Shared>>>,
}

/// An address may hold this part of the budget at once.
const SHARE: usize = 8;

/// A socket holding a draw whose peer has taken nothing for this long is closed (4008)
/// when another's draw does not fit. Without it, four sockets of four addresses that
/// never read their 20 MB welcomes, replaced before their ping timeout, kept every
/// welcome over 2 MiB on the node refused 1013 for as long as they liked (the seventh
/// review). A reader that is merely slow takes bytes every so often and keeps its place.
pub const MAKE_WAY_AFTER_MS: u64 = 5_000;

impl Budget {
    pub fn new(bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicUsize::new(bytes),
            share: bytes / SHARE,
            by_address: Mutex::new(HashMap::new()),
            holders: Mutex::new(Vec::new()),
        })
    }

    /// Takes `n` bytes for the socket `holder`, against its address's share; when they do
    /// not fit, closes the holders whose peers have taken nothing for
    /// [`MAKE_WAY_AFTER_MS`], so the next try finds room.
    pub(super) fn draw(&self, holder: &Arc<Shared>, n: usize) -> bool {
        if self.take(holder.address.get().copied(), n) {
            holder.drawn.fetch_add(n, Ordering::AcqRel);
            let mut holders = self.holders.lock().unwrap_or_else(|p| p.into_inner());
            holders.retain(|h| {
                h.upgrade()
                    .is_some_and(|h| h.drawn.load(Ordering::Acquire) > 0)
            });
            holders.push(Arc::downgrade(holder));
            return true;
        }
        // Only when the node-wide allowance is what is short: a draw refused for its own
        // address's share would gain nothing from others making way.
        if self.left.load(Ordering::Acquire) < n {
            self.make_way(crate::clock::unix_ms() as u64);
        }
        false
    }

    /// Closes the holders that have taken nothing for [`MAKE_WAY_AFTER_MS`] at `now_ms`.
    fn make_way(&self, now_ms: u64) {
        let holders = self.holders.lock().unwrap_or_else(|p| p.into_inner());
        for h in holders.iter().filter_map(Weak::upgrade) {
            let since = h.write_waiting_since.load(Ordering::Acquire);
            let stalled = since > 0 && now_ms.saturating_sub(since) >= MAKE_WAY_AFTER_MS;
            if stalled && h.drawn.load(Ordering::Acquire) > 0 {
                h.close(
                    CloseCode::TooSlow,
                    "too slow: took nothing of a large message for 5 s while others waited",
                );
            }
        }
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
