//! The addresses whose holders of large messages were closed for taking nothing, or too
//! slowly: for a while they keep no place and come after every other.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// How long an address is remembered.
pub(super) const STALLED_KEPT_MS: u64 = 60_000;

/// Most addresses remembered at once.
pub(super) const MOST_STALLED: usize = 4096;

/// Addresses and until when each is remembered, and the order they were remembered in, so
/// that the one remembered longest is found without a scan (all are kept equally long).
#[derive(Default)]
pub(super) struct Stalled {
    until: HashMap<IpAddr, u64>,
    /// Oldest first; an entry whose time no longer matches `until` was renewed or forgotten.
    order: VecDeque<(IpAddr, u64)>,
}

impl Stalled {
    /// Remembers `address` from `now_ms`. With [`MOST_STALLED`] remembered and none of them
    /// over, the one remembered longest is forgotten: the newest stalls are the ones in the
    /// way now (an attacker with more addresses than the list holds was not remembered at
    /// all, the twenty-fourth review).
    pub(super) fn remember(&mut self, address: IpAddr, now_ms: u64) {
        let new = !self.until.contains_key(&address);
        while let Some(&(oldest, until)) = self.order.front() {
            let current = self.until.get(&oldest) == Some(&until);
            let full = new && self.until.len() >= MOST_STALLED;
            if current && until > now_ms && !full {
                break;
            }
            self.order.pop_front();
            if current {
                self.until.remove(&oldest);
            }
        }
        let until = now_ms + STALLED_KEPT_MS;
        // Remembered again in the same millisecond (several of its holders closed in one
        // pass): its entry stands, and a second identical one would outlive compaction.
        if self.until.insert(address, until) == Some(until) {
            return;
        }
        self.order.push_back((address, until));
        // Renewals leave entries behind in `order`; drop them before they outnumber the
        // addresses, so each renewal costs O(1) on the whole.
        if self.order.len() > 2 * MOST_STALLED {
            let until = &self.until;
            self.order.retain(|(a, t)| until.get(a) == Some(t));
        }
    }

    /// Whether `address` is remembered at `now_ms`.
    pub(super) fn holds(&self, address: &IpAddr, now_ms: u64) -> bool {
        self.until.get(address).is_some_and(|&until| until > now_ms)
    }

    /// How many addresses are remembered (some perhaps over, until the next is).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.until.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(n: u32) -> IpAddr {
        IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n))
    }

    /// An address stalled again is remembered from then: when the list is full, the one
    /// forgotten is the one whose last stall is oldest, not the first ever remembered.
    #[test]
    fn a_renewed_address_is_forgotten_last() {
        let mut stalled = Stalled::default();
        for n in 0..MOST_STALLED as u32 {
            stalled.remember(address(n), u64::from(n));
        }
        stalled.remember(address(0), 5_000);
        stalled.remember(address(9_000), 5_001);
        assert!(stalled.holds(&address(0), 5_001));
        assert!(!stalled.holds(&address(1), 5_001));
        assert!(stalled.holds(&address(2), 5_001));
        assert_eq!(stalled.len(), MOST_STALLED);
    }

    /// Renewing the same addresses again and again, also several times in one millisecond,
    /// leaves at most twice the bound of entries behind, and the list stays right.
    #[test]
    fn renewals_leave_a_bounded_queue() {
        let mut stalled = Stalled::default();
        for round in 0..10u64 {
            for n in 0..MOST_STALLED as u32 {
                for _ in 0..3 {
                    stalled.remember(address(n), round * 10_000 + u64::from(n));
                }
                assert!(stalled.order.len() <= 2 * MOST_STALLED);
            }
        }
        assert_eq!(stalled.len(), MOST_STALLED);
        assert!(stalled.holds(&address(0), 95_000));
        // Every entry but the newest of each address is gone once the queue is compacted
        // or its time is up.
        stalled.remember(address(99_999), 90_000 + STALLED_KEPT_MS + 5_000);
        assert_eq!(stalled.len(), 1);
        assert_eq!(stalled.order.len(), 1);
    }
}
