//! What a socket may hold of messages not yet whole: large frames and fragmented messages
//! are read only once they fit the node's memory budget and their client address's share
//! of it, so the sockets of one address cannot take the whole budget with messages they
//! never finish (the sixth review held a megabyte in each of 300 sockets of 3 addresses).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use super::MemoryGuard;
use crate::ws::Allowance;

/// Bytes of unfinished large messages held per client address, node-wide.
#[derive(Default)]
pub struct IncomingShares {
    held: Mutex<HashMap<IpAddr, usize>>,
}

impl IncomingShares {
    /// Takes `bytes` of `address`'s `share` if they fit (or if it holds nothing: one
    /// message of any allowed size always may).
    fn take(&self, address: IpAddr, bytes: usize, share: usize) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let now = held.get(&address).copied().unwrap_or(0);
        if now > 0 && now + bytes > share {
            return false;
        }
        held.insert(address, now + bytes);
        true
    }

    fn give_back(&self, address: IpAddr, bytes: usize) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&address) {
            *n = n.saturating_sub(bytes);
            if *n == 0 {
                held.remove(&address);
            }
        }
    }

    /// Bytes `address` holds now.
    pub fn held(&self, address: IpAddr) -> usize {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.get(&address).copied().unwrap_or(0)
    }
}

/// One socket's allowance: its address's share, then the node's budget.
pub struct SocketAllowance {
    pub memory: Arc<MemoryGuard>,
    pub shares: Arc<IncomingShares>,
    pub address: IpAddr,
    /// Bytes one address may hold.
    pub share: usize,
}

impl SocketAllowance {
    /// An address's share of a budget: a thirty-second, and at least 8 MiB (eight of the
    /// largest messages at once: an office pasting together; more wait their turn).
    pub fn share_of(budget: u64) -> usize {
        ((budget / 32) as usize).max(8 << 20)
    }
}

impl Allowance for SocketAllowance {
    fn admits(&self, bytes: usize) -> bool {
        if !self.shares.take(self.address, bytes, self.share) {
            return false;
        }
        if !Allowance::admits(&*self.memory, bytes) {
            self.shares.give_back(self.address, bytes);
            return false;
        }
        true
    }

    fn arrived(&self, bytes: usize) {
        self.memory.arrived(bytes);
    }

    fn release(&self, bytes: usize) {
        self.shares.give_back(self.address, bytes);
    }

    fn inflated(&self, bytes: usize) {
        self.memory.inflated(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_its_share_then_waits_for_what_it_held() {
        let shares = Arc::new(IncomingShares::default());
        let socket = |n: u8| SocketAllowance {
            memory: MemoryGuard::new(u64::MAX / 4),
            shares: shares.clone(),
            address: IpAddr::from([10, 0, 0, n]),
            share: 3 << 20,
        };
        let (a, b, other) = (socket(1), socket(1), socket(2));
        assert!(a.admits(2 << 20));
        assert!(!b.admits(2 << 20), "past the address's share");
        assert!(b.admits(1 << 20), "within it");
        assert!(other.admits(2 << 20), "another address has its own");
        a.release(2 << 20);
        assert!(b.admits(2 << 20), "given back when the message ended");
        b.release(3 << 20);
        other.release(2 << 20);
        assert!(
            shares.held.lock().unwrap().is_empty(),
            "nothing kept at zero"
        );
        // One message of any size while nothing is held.
        assert!(a.admits(8 << 20));
    }
}
