//! Each client address's part of a budget that everyone in a room draws on.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use super::Bucket;

/// Addresses kept before those whose part is back to full are forgotten: a part at full is
/// no different from a new one, so forgetting it changes nothing but memory.
const FORGET_FROM: usize = 256;

/// A room's budget shared out by client address: each address, all its sockets together
/// and however often they join, may take a quarter of it, so one address cannot use up what
/// the others in the room need (socket events, `person.*` webhook events).
#[derive(Debug)]
pub struct AddressQuarters {
    rate: f64,
    burst: f64,
    parts: HashMap<Option<IpAddr>, Bucket>,
}

impl AddressQuarters {
    /// Quarters of a budget of `rate` a second and `burst` at once (at least one at once,
    /// when the whole has one: a budget of 2 leaves no address without).
    pub fn new(rate: f64, burst: f64) -> Self {
        Self {
            rate: rate / 4.0,
            burst: (burst / 4.0).max(burst.min(1.0)),
            parts: HashMap::new(),
        }
    }

    /// `address`'s quarter (none: a socket with no address, all such sharing one).
    pub fn of(&mut self, address: Option<IpAddr>, now: Instant) -> &mut Bucket {
        if self.parts.len() >= FORGET_FROM && !self.parts.contains_key(&address) {
            self.parts.retain(|_, part| !part.is_full(now));
        }
        let (rate, burst) = (self.rate, self.burst);
        self.parts
            .entry(address)
            .or_insert_with(|| Bucket::new(rate, burst, now))
    }

    /// Takes one from `address`'s quarter and then from `whole`, the room's own budget, if
    /// both have one; takes nothing otherwise.
    pub fn take_with(&mut self, whole: &mut Bucket, address: Option<IpAddr>, now: Instant) -> bool {
        let part = self.of(address, now);
        if !part.take(now) {
            return false;
        }
        if whole.take(now) {
            return true;
        }
        part.give(now, 1.0);
        false
    }

    /// Addresses remembered now.
    #[cfg(test)]
    pub fn remembered(&self) -> usize {
        self.parts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(n: u32) -> Option<IpAddr> {
        Some(IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + n)))
    }

    #[test]
    fn an_address_takes_a_quarter_and_the_others_the_rest() {
        let now = Instant::now();
        let mut whole = Bucket::new(0.0, 8.0, now);
        let mut quarters = AddressQuarters::new(0.0, 8.0);
        let taken = (0..8)
            .filter(|_| quarters.take_with(&mut whole, address(1), now))
            .count();
        assert_eq!(taken, 2, "a quarter of 8");
        let others = (2..10)
            .filter(|n| quarters.take_with(&mut whole, address(*n), now))
            .count();
        assert_eq!(
            others, 6,
            "the rest of the room's budget, for everyone else"
        );
        assert!(!quarters.take_with(&mut whole, address(11), now));
        // Refused by the room, an address keeps its part.
        let mut room = Bucket::new(0.0, 8.0, now);
        assert!(room.take_amount(now, 8.0));
        assert!(!quarters.take_with(&mut room, address(12), now));
        assert!(quarters.of(address(12), now).is_full(now));
    }

    #[test]
    fn parts_back_to_full_are_forgotten_once_many() {
        let start = Instant::now();
        let mut quarters = AddressQuarters::new(4.0, 4.0);
        let mut whole = Bucket::new(1e9, 1e9, start);
        for n in 0..FORGET_FROM as u32 {
            assert!(quarters.take_with(&mut whole, address(n), start));
        }
        assert_eq!(quarters.remembered(), FORGET_FROM);
        // A second later every part has earned its token back.
        let later = start + std::time::Duration::from_secs(1);
        quarters.of(address(100_000), later);
        assert_eq!(quarters.remembered(), 1);
    }
}
