//! What the shared copies of each owner's files are charged on the allowance for large
//! messages, and which address waits first for room in an owner's share.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::store::Holder;

/// Owners kept before the map is first swept of those charged nothing with no one waiting.
const SWEPT_FROM: usize = 64;

#[derive(Default)]
pub(super) struct Owners {
    by_owner: HashMap<Holder, Owed>,
    /// How many owners there may be before the map is swept.
    mark: usize,
}

#[derive(Default)]
struct Owed {
    charged: usize,
    /// The first address refused for want of room in this owner's share: its next try
    /// comes before others', as a place in the allowance's own order does. Without it the
    /// room that holders making way free went to whoever came next: a guest opening
    /// sockets to someone's public file every 50 ms kept its other readers out.
    first: Option<Place>,
}

struct Place {
    address: IpAddr,
    bytes: usize,
    last_ms: u64,
    by_link: bool,
}

/// Who a copy is made for: its file's owner, or someone the app grants the file to, comes
/// before those who reach it by a link key (`by_link`) in its owner's share: guests holding
/// copies of someone's public file do not keep the owner out of it for rounds on end.
#[derive(Clone, Copy)]
pub struct CopyFor {
    pub address: Option<IpAddr>,
    pub by_link: bool,
}

impl Owners {
    /// Whether a copy of `n` bytes of one of `owner`'s files, made for `joiner`, fits at
    /// `now_ms`: the owner is charged nothing and no one waits, or, beside what the first
    /// address refused asked for (unless that is the joiner's, lost its place (`lost`), or
    /// came by a link while the joiner did not), it fits within the owner's `share` or
    /// within the `spare` room the allowance has over half of it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fits(
        &self,
        owner: &Holder,
        joiner: CopyFor,
        n: usize,
        share: usize,
        spare: usize,
        now_ms: u64,
        lost: impl Fn(&IpAddr) -> bool,
    ) -> bool {
        let Some(owed) = self.by_owner.get(owner) else {
            return true;
        };
        let ahead = owed
            .first
            .as_ref()
            .filter(|p| !place_lost(p, now_ms, &lost) && goes_before(p, joiner))
            .map_or(0, |p| p.bytes.min(share));
        (owed.charged == 0 && ahead == 0) || owed.charged + n + ahead <= share || n + ahead <= spare
    }

    /// `address` was served a copy of one of `owner`'s files it shares: it keeps no place.
    pub(super) fn served(&mut self, owner: &Holder, address: IpAddr) {
        if let Some(owed) = self.by_owner.get_mut(owner) {
            if owed.first.as_ref().is_some_and(|p| p.address == address) {
                owed.first = None;
            }
        }
    }

    /// A copy of `n` bytes was charged to `owner` for a joiner at `address`, which keeps
    /// no place now.
    pub(super) fn charged(&mut self, owner: &Holder, address: Option<IpAddr>, n: usize) {
        let owed = self.by_owner.entry(owner.clone()).or_default();
        owed.charged += n;
        if owed.first.as_ref().map(|p| Some(p.address)) == Some(address) {
            owed.first = None;
        }
    }

    /// A copy of `n` bytes for `joiner` did not fit `owner`'s share: the joiner's address
    /// takes the first place unless one that goes before it holds it, or the address
    /// `holds` large messages already (a guest reading one copy, asking again from another
    /// socket, would keep the place, and every other reader of the owner's files out, for
    /// as long as it read: the twenty-seventh review).
    pub(super) fn refused(
        &mut self,
        owner: &Holder,
        joiner: CopyFor,
        n: usize,
        holds: bool,
        now_ms: u64,
        lost: impl Fn(&IpAddr) -> bool,
    ) {
        let Some(address) = joiner.address.filter(|a| !lost(a) && !holds) else {
            return;
        };
        self.sweep(now_ms, &lost);
        let owed = self.by_owner.entry(owner.clone()).or_default();
        let taken = owed
            .first
            .as_ref()
            .is_some_and(|p| !place_lost(p, now_ms, &lost) && goes_before(p, joiner));
        if !taken {
            owed.first = Some(Place {
                address,
                bytes: n,
                last_ms: now_ms,
                by_link: joiner.by_link,
            });
        }
    }

    /// A copy of `owner`'s of `n` bytes is gone.
    pub(super) fn give(&mut self, owner: &Holder, n: usize) {
        if let Some(owed) = self.by_owner.get_mut(owner) {
            owed.charged = owed.charged.saturating_sub(n);
            if owed.charged == 0 && owed.first.is_none() {
                self.by_owner.remove(owner);
            }
        }
    }

    /// Forgets owners charged nothing whose first place is over, once the map has grown
    /// past twice what it held after the last sweep (an owner charged nothing keeps its
    /// entry only while someone waits; one who never comes back leaves it behind).
    fn sweep(&mut self, now_ms: u64, lost: &impl Fn(&IpAddr) -> bool) {
        if self.by_owner.len() < self.mark.max(SWEPT_FROM) {
            return;
        }
        self.by_owner.retain(|_, owed| {
            owed.charged > 0
                || owed
                    .first
                    .as_ref()
                    .is_some_and(|p| !place_lost(p, now_ms, lost))
        });
        self.mark = 2 * self.by_owner.len();
    }
}

/// Whether the address in `place` goes before `joiner`: it is another's, and came as the
/// joiner did or the joiner came by a link.
fn goes_before(place: &Place, joiner: CopyFor) -> bool {
    Some(place.address) != joiner.address && (joiner.by_link || !place.by_link)
}

/// Whether `place` is no longer kept: its address did not come back within
/// [`super::budget::PLACE_KEPT_MS`], or was lately closed for taking nothing.
fn place_lost(place: &Place, now_ms: u64, lost: &impl Fn(&IpAddr) -> bool) -> bool {
    now_ms.saturating_sub(place.last_ms) >= super::budget::PLACE_KEPT_MS || lost(&place.address)
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
        for n in 0..1_000 {
            owners.refused(&file(n), joiner, 10, false, 0, never);
        }
        let later = super::super::budget::PLACE_KEPT_MS;
        for n in 1_000..1_100 {
            owners.refused(&file(n), joiner, 10, false, later + n as u64, never);
        }
        assert!(owners.by_owner.len() <= 200, "{} kept", owners.by_owner.len());
        owners.charged(&file(5_000), None, 10);
        owners.give(&file(5_000), 10);
        assert!(!owners.by_owner.contains_key(&file(5_000)));
    }
}
