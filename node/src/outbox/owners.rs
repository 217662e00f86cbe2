//! What the shared copies of each owner's files are charged on the allowance for large
//! messages, and the addresses that wait, in order, for room in an owner's share.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::store::Holder;

/// How long an address keeps its place after its last refusal, here and in the allowance's
/// own order: a client comes back after 1013 within a few seconds (its `retry-ms` hint); one
/// that does not loses its place.
pub(super) const PLACE_KEPT_MS: u64 = 10_000;

/// Owners kept before the map is first swept of those charged nothing with no one waiting.
const SWEPT_FROM: usize = 64;

/// Most addresses that keep a place in one owner's share (as many as in the allowance's own
/// order); past it a newcomer that holds nothing takes the place of the last that holds
/// something, and others are refused without one.
const MOST_PLACES: usize = 64;

#[derive(Default)]
pub(super) struct Owners {
    by_owner: HashMap<Holder, Owed>,
    /// How many owners there may be before the map is swept.
    mark: usize,
}

#[derive(Default)]
struct Owed {
    charged: usize,
    /// The addresses refused for want of room in this owner's share, kept in the order
    /// they were first refused: what comes back goes to them by [`Place::rank`], as places
    /// in the allowance's own order do. Without them the room that holders making way freed
    /// went to whoever came next: a guest opening sockets to someone's public file every
    /// 50 ms kept its other readers out; and with one place only, a second address of the
    /// guest's, asking every 50 ms, took it again each time it was served (the
    /// twenty-eighth review).
    places: Vec<Place>,
}

struct Place {
    address: IpAddr,
    bytes: usize,
    last_ms: u64,
    by_link: bool,
}

/// What a call is judged by: its time (ms since the Unix epoch), and whether an address was
/// lately closed for taking nothing (`lost`) or holds large messages now (`holds`).
pub(super) struct Moment<'a> {
    pub ms: u64,
    pub lost: &'a dyn Fn(&IpAddr) -> bool,
    pub holds: &'a dyn Fn(&IpAddr) -> bool,
}

impl Place {
    /// Where the place is served: the file's owner and those the app grants it to before
    /// guests who came by a link, then addresses that hold nothing before those that hold
    /// large messages (as in the allowance's own order: an attacker's address served a copy
    /// and asking again at once does not take the place of a reader who holds none), then in
    /// the order they were first refused (`index`).
    fn rank(&self, index: usize, at: &Moment) -> (bool, bool, usize) {
        (self.by_link, (at.holds)(&self.address), index)
    }

    /// Whether the place is no longer kept: its address did not come back within
    /// [`PLACE_KEPT_MS`], or was lately closed for taking nothing.
    fn lost(&self, at: &Moment) -> bool {
        at.ms.saturating_sub(self.last_ms) >= PLACE_KEPT_MS || (at.lost)(&self.address)
    }
}

/// Who a copy is made for: its file's owner, or someone the app grants the file to, comes
/// before those who reach it by a link key (`by_link`) in its owner's share: guests holding
/// copies of someone's public file do not keep the owner out of it for rounds on end.
#[derive(Clone, Copy)]
pub struct CopyFor {
    pub address: Option<IpAddr>,
    pub by_link: bool,
}

impl Owed {
    /// What the places served before `joiner` asked for, each at most `share` (places lost
    /// do not count), in the order of [`Place::rank`]; a joiner with a place is ranked by it,
    /// one without comes after every place of its kind.
    fn ahead_of(&self, joiner: CopyFor, share: usize, at: &Moment) -> usize {
        let mine = self
            .places
            .iter()
            .position(|p| Some(p.address) == joiner.address);
        let my_rank = match mine {
            Some(i) => self.places[i].rank(i, at),
            None => {
                let holds = joiner.address.is_some_and(|a| (at.holds)(&a));
                (joiner.by_link, holds, usize::MAX)
            }
        };
        self.places
            .iter()
            .enumerate()
            .filter(|(i, p)| Some(*i) != mine && p.rank(*i, at) < my_rank && !p.lost(at))
            .fold(0usize, |sum, (_, p)| sum.saturating_add(p.bytes.min(share)))
    }
}

impl Owners {
    /// Whether a copy of `n` bytes of one of `owner`'s files, made for `joiner`, fits at
    /// `now_ms`: the owner is charged nothing and no one waits ahead, or, beside what the
    /// places ahead of the joiner asked for (each at most `share`; places lost by `lost` do
    /// not count), it fits within the owner's `share` or within the `spare` room the
    /// allowance has over half of itself.
    pub(super) fn fits(
        &self,
        owner: &Holder,
        joiner: CopyFor,
        n: usize,
        (share, spare): (usize, usize),
        at: &Moment,
    ) -> bool {
        let Some(owed) = self.by_owner.get(owner) else {
            return true;
        };
        let ahead = owed.ahead_of(joiner, share, at);
        (owed.charged == 0 && ahead == 0)
            || owed.charged.saturating_add(n).saturating_add(ahead) <= share
            || n.saturating_add(ahead) <= spare
    }

    /// `address` was served a copy of one of `owner`'s files it shares: it keeps no place.
    pub(super) fn served(&mut self, owner: &Holder, address: IpAddr) {
        if let Some(owed) = self.by_owner.get_mut(owner) {
            owed.places.retain(|p| p.address != address);
        }
    }

    /// A copy of `n` bytes was charged to `owner` for a joiner at `address`, which keeps
    /// no place now.
    pub(super) fn charged(&mut self, owner: &Holder, address: Option<IpAddr>, n: usize) {
        let owed = self.by_owner.entry(owner.clone()).or_default();
        owed.charged += n;
        owed.places.retain(|p| Some(p.address) != address);
    }

    /// A copy of `n` bytes for `joiner` did not fit `owner`'s share: the joiner's address
    /// keeps its place, or takes one at the end; while [`MOST_PLACES`] are kept, only one
    /// that holds nothing does, in the place of the last that holds something. An address
    /// lately closed for taking nothing takes none.
    pub(super) fn refused(&mut self, owner: &Holder, joiner: CopyFor, n: usize, at: &Moment) {
        let Some(address) = joiner.address.filter(|a| !(at.lost)(a)) else {
            return;
        };
        self.sweep(at);
        let owed = self.by_owner.entry(owner.clone()).or_default();
        owed.places.retain(|p| !p.lost(at));
        if let Some(p) = owed.places.iter_mut().find(|p| p.address == address) {
            (p.bytes, p.last_ms) = (n, at.ms);
            p.by_link &= joiner.by_link;
            return;
        }
        if owed.places.len() >= MOST_PLACES {
            let holding = owed.places.iter().rposition(|p| (at.holds)(&p.address));
            match holding {
                Some(i) if !(at.holds)(&address) => drop(owed.places.remove(i)),
                _ => return,
            }
        }
        owed.places.push(Place {
            address,
            bytes: n,
            last_ms: at.ms,
            by_link: joiner.by_link,
        });
    }

    /// A copy of `owner`'s of `n` bytes is gone.
    pub(super) fn give(&mut self, owner: &Holder, n: usize) {
        if let Some(owed) = self.by_owner.get_mut(owner) {
            owed.charged = owed.charged.saturating_sub(n);
            if owed.charged == 0 && owed.places.is_empty() {
                self.by_owner.remove(owner);
            }
        }
    }

    /// Forgets owners charged nothing whose places are all over, once the map has grown
    /// past twice what it held after the last sweep (an owner charged nothing keeps its
    /// entry only while someone waits; one who never comes back leaves it behind).
    fn sweep(&mut self, at: &Moment) {
        if self.by_owner.len() < self.mark.max(SWEPT_FROM) {
            return;
        }
        self.by_owner
            .retain(|_, owed| owed.charged > 0 || owed.places.iter().any(|p| !p.lost(at)));
        self.mark = 2 * self.by_owner.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FileId;

    fn file(n: usize) -> Holder {
        Holder::File(FileId::parse(&format!("f{n}")).unwrap())
    }

    /// Owners charged nothing whose first place is over are forgotten: the map holds the
    /// owners charged and those with someone waiting, not every owner ever refused.
    #[test]
    fn owners_no_one_waits_for_are_forgotten() {
        let mut owners = Owners::default();
        let joiner = CopyFor {
            address: Some(IpAddr::from([192, 0, 2, 1])),
            by_link: true,
        };
        let never = |_: &IpAddr| false;
        let at = |ms| Moment {
            ms,
            lost: &never,
            holds: &never,
        };
        for n in 0..1_000 {
            owners.refused(&file(n), joiner, 10, &at(0));
        }
        for n in 1_000..1_100 {
            owners.refused(&file(n), joiner, 10, &at(PLACE_KEPT_MS + n as u64));
        }
        assert!(
            owners.by_owner.len() <= 200,
            "{} kept",
            owners.by_owner.len()
        );
        owners.charged(&file(5_000), None, 10);
        owners.give(&file(5_000), 10);
        assert!(!owners.by_owner.contains_key(&file(5_000)));
    }
}
