//! The node-wide allowance for messages larger than a send queue: welcomes of large
//! documents and the patches of restores of large versions, while they wait to be sent.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use atrium_protocol::CloseCode;

use super::owners::{CopyFor, Moment, Owners, PLACE_KEPT_MS};
use super::stalled::Stalled;
use super::{HeldCopy, Shared};
use crate::store::Holder;
use crate::ws::Middle;

/// A node-wide allowance for messages bigger than a send queue may hold, so that a burst
/// of joins to a big file cannot take all memory; and a share of it per client address,
/// so that sockets of one address that never read their welcomes cannot hold all of it and
/// keep everyone else out of every large file.
pub struct Budget {
    left: AtomicUsize,
    /// All of it: a draw larger can never be served, and is refused without a place.
    capacity: usize,
    /// What one address may hold at once, unless it holds nothing (one message of any size
    /// the budget has room for is always let through, or a large file could never be
    /// opened).
    share: usize,
    by_address: Mutex<HashMap<IpAddr, usize>>,
    /// The sockets that drew on it or hold a shared copy (some may have given back since):
    /// when a draw does not fit, those among them that took nothing for
    /// [`MAKE_WAY_AFTER_MS`], or too slowly, are closed.
    holders: Mutex<Vec<Weak<Shared>>>,
    /// Addresses whose draw found the node-wide allowance short, in the order they are
    /// served: what comes back goes to them first (see [`Waiter`]).
    waiting: Mutex<Vec<Waiter>>,
    /// Addresses whose holders were closed for taking nothing, or too slowly, while others
    /// waited, and until when (ms since the Unix epoch) they keep no place and come after
    /// every other.
    stalled: Mutex<Stalled>,
    /// Shared copies each address holds, and by how many of its sockets: a copy counts
    /// against an address's share once, however many of its sockets hold it. Locked after
    /// `by_address`.
    copies: Mutex<HashMap<(IpAddr, CopyId), usize>>,
    /// What the shared copies of each owner's files are charged (of the app's files, each
    /// file's), and who waits for room in an owner's share: see [`OWNER_SHARE`].
    /// Locked before the others, and never while holders are closed (a copy's last holder
    /// gives its charge back as it goes).
    owners: Mutex<Owners>,
    /// How many holders there may be before those done are swept out of the list.
    holders_mark: AtomicUsize,
}

/// A shared copy, by where it lives (it lives as long as a holder counts it).
type CopyId = usize;

fn copy_id(copy: &Arc<Middle>) -> CopyId {
    Arc::as_ptr(copy) as usize
}

/// Holders kept before the list is first swept.
const HOLDERS_SWEPT_FROM: usize = 64;

/// Whose draw it is: a joiner's welcome waits its turn behind the addresses refused before
/// it; a large message to a socket already welcomed (a restore's patch) goes whenever it
/// fits, or its room's people would be closed 1013 for others' welcomes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Draw {
    Welcome,
    Member,
    /// A copy many welcomes share, made for one joiner: it waits its turn as that joiner's
    /// welcome would, within the joiner's address's share, but is counted against the
    /// addresses that hold it, each once, for as long as they do ([`Budget::hold_copy`]),
    /// not against the address it was made for.
    Copy,
}

/// An address refused for want of room, which is served before addresses that hold more,
/// or as much and asked later, and before addresses whose holders lately took nothing while
/// others waited (they keep no place). Without it, the room that holders making way gave
/// back went to whoever drew next: sockets of eight addresses that never read, coming back
/// every 250 ms, took it each time, and a person opening their own 3 MB file once a second
/// was refused 1013 28 times in 30 (the twentieth review).
struct Waiter {
    address: IpAddr,
    /// What its refused draw asked for.
    bytes: usize,
    /// When it was first refused, and last (ms since the Unix epoch).
    since_ms: u64,
    last_ms: u64,
}

/// Most addresses that keep a place at once; more are refused without one.
const MOST_WAITING: usize = 64;

/// What one waiter is promised at most, as a part of the allowance: a waiter asking for
/// nearly all of it would otherwise hold up every other large message until all of it came
/// back (the twenty-first review).
const PROMISED_AT_MOST: usize = 4;

/// An address may hold this part of the budget at once.
const SHARE: usize = 8;

/// The shared copies of one owner's files (of one file, for the app's own files, which one
/// stand-in account owns) may be charged this part of the budget at once, unless they are
/// charged nothing. Without it one free account's large file, joined from eight addresses
/// with a one-op patch between joins (a new version each time, so a new copy each time),
/// filled the whole allowance with copies its sockets read at a trickle, and another
/// owner's file was refused until the slow-holder rule closed them (38 s with 33 MB copies,
/// the twenty-third review); now such an account holds a quarter, or more only while half
/// the allowance stays free for others.
const OWNER_SHARE: usize = 4;

/// A socket holding large messages (its own draws and shared copies) for longer than
/// [`MAKE_WAY_AFTER_MS`] plus their time at this rate is closed (4008) when another's draw
/// does not fit, as one that takes nothing is: sockets of eight addresses each reading a
/// copy of a 33 MB file at 17.5 KB/s (enough never to be seen taking nothing for 5 s) held
/// the whole allowance for half an hour each, and the owner of another file was refused 85
/// times in 85 s (the twenty-third review). A person on a 10 Mbit/s line reads faster.
pub const SLOWEST_HOLDER_BYTES_PER_SECOND: u64 = 1024 * 1024;

/// `holder` draws `n` more bytes; when it held nothing, its hold begins at `now_ms`. What it
/// is given while it holds counts toward its hold (a welcome and then a restore's patch are
/// one hold of both), not what it holds at the moment. The hold's start is set before the
/// draw is seen as well as after it, so that a [`Budget::make_way`] on another thread does
/// not judge a new hold by an old start.
fn began_holding(holder: &Shared, n: usize, now_ms: u64) {
    if holder.drawn.load(Ordering::Acquire) == 0 {
        holder.holding_since.store(now_ms, Ordering::Release);
        holder.held_bytes.store(0, Ordering::Release);
    }
    if holder.drawn.fetch_add(n, Ordering::AcqRel) == 0 {
        holder.holding_since.store(now_ms, Ordering::Release);
        holder.held_bytes.store(n as u64, Ordering::Release);
    } else {
        holder.held_bytes.fetch_add(n as u64, Ordering::AcqRel);
    }
}

/// A socket holding a draw whose peer has taken nothing for this long is closed (4008)
/// when another's draw does not fit. Without it, four sockets of four addresses that
/// never read their 20 MB welcomes, replaced before their ping timeout, kept every
/// welcome over 2 MiB on the node refused 1013 for as long as they liked (the seventh
/// review). A reader that is merely slow takes bytes every so often and keeps its place,
/// unless it is slower than [`SLOWEST_HOLDER_BYTES_PER_SECOND`].
pub const MAKE_WAY_AFTER_MS: u64 = 5_000;

/// What a copy shared by many sockets was charged on the [`Budget`], node-wide (addresses
/// are charged for it while they hold it: [`HeldCopy`]): given back when dropped, which is
/// when the copy's last bytes are (they keep it alive).
pub struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
    owner: Holder,
}

impl Drop for Charge {
    fn drop(&mut self) {
        // Both under the owners' lock: a copy charged meanwhile sees both given back or
        // neither, not room in one and none in the other.
        let mut owners = self.budget.owners.lock().unwrap_or_else(|p| p.into_inner());
        owners.give(&self.owner, self.bytes);
        self.budget.give(None, self.bytes);
    }
}

impl Budget {
    pub fn new(bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicUsize::new(bytes),
            capacity: bytes,
            share: bytes / SHARE,
            by_address: Mutex::new(HashMap::new()),
            holders: Mutex::new(Vec::new()),
            waiting: Mutex::new(Vec::new()),
            stalled: Mutex::new(Stalled::default()),
            copies: Mutex::new(HashMap::new()),
            owners: Mutex::new(Owners::default()),
            holders_mark: AtomicUsize::new(HOLDERS_SWEPT_FROM),
        })
    }

    /// Takes `n` bytes for the socket `holder`, against its address's share; when they do
    /// not fit, closes the holders whose peers have taken nothing for
    /// [`MAKE_WAY_AFTER_MS`], or too slowly, so the next try finds room.
    pub(super) fn draw(&self, holder: &Arc<Shared>, n: usize, kind: Draw) -> bool {
        let now_ms = crate::clock::unix_ms() as u64;
        if self.take_at(holder.address.get().copied(), n, now_ms, kind) {
            began_holding(holder, n, now_ms);
            self.hold(holder);
            return true;
        }
        self.refused(n, now_ms);
        false
    }

    /// Charges `n` bytes for a copy many welcomes will share (a large document of one of
    /// `owner`'s files), made for `joiner`: in its turn, as the joiner's welcome would draw,
    /// within its address's share and the owner's ([`OWNER_SHARE`], where those who came by
    /// a link come after others: [`CopyFor`]); given back when the
    /// [`Charge`] is dropped, with the copy's last bytes. Against an address's share the
    /// copy counts only while one of its sockets holds it ([`Self::hold_copy`]): a sharer
    /// that never reads does not hold it against the address it was made for (the
    /// twenty-second review).
    pub fn charge(self: &Arc<Self>, joiner: CopyFor, n: usize, owner: &Holder) -> Option<Charge> {
        let now_ms = crate::clock::unix_ms() as u64;
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        let share = self.capacity / OWNER_SHARE;
        // Past its quarter an owner's copies may take what the allowance has over half of
        // it: a node whose allowance is mostly free serves an owner's many readers as before.
        let spare = (self.left.load(Ordering::Acquire)).saturating_sub(self.capacity / 2);
        let held = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        let stalled = self.stalled.lock().unwrap_or_else(|p| p.into_inner());
        let at = Moment {
            ms: now_ms,
            lost: &|a: &IpAddr| stalled.holds(a, now_ms),
            holds: &|a: &IpAddr| held.get(a).is_some_and(|&n| n > 0),
        };
        let fits = owners.fits(owner, joiner, n, (share, spare), &at);
        if !fits {
            owners.refused(owner, joiner, n, &at);
        }
        drop((stalled, held));
        if fits && self.take_at(joiner.address, n, now_ms, Draw::Copy) {
            owners.charged(owner, joiner.address, n);
            return Some(Charge {
                budget: self.clone(),
                bytes: n,
                owner: owner.clone(),
            });
        }
        drop(owners);
        match fits {
            true => self.refused(n, now_ms),
            // Short of the owner's share, the holders of its copies that take nothing, or
            // too slowly, make way (not others': their files are not what is short): a guest
            // holding copies of someone's public file at a trickle does not keep the file's
            // other readers out.
            false => self.make_way(now_ms, Some(owner)),
        }
        None
    }

    /// Whether a socket of `address` may hold `copy`: its address holds it already, holds
    /// nothing, or has room for it in its share.
    pub fn may_hold(&self, address: Option<IpAddr>, copy: &Arc<Middle>) -> bool {
        let Some(address) = address else {
            return true;
        };
        let held = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        let copies = self.copies.lock().unwrap_or_else(|p| p.into_inner());
        let mine = held.get(&address).copied().unwrap_or(0);
        copies.contains_key(&(address, copy_id(copy))) || self.within_share(mine, copy.len())
    }

    /// Whether an address holding `mine` may take `n` more: within its share, or anything
    /// the allowance has room for when it holds nothing (or a large file could never be
    /// opened).
    fn within_share(&self, mine: usize, n: usize) -> bool {
        mine == 0 || mine + n <= self.share
    }

    /// An address refused before was served after all (by a copy it shares): it keeps no
    /// place, or what it was promised would hold up others for nothing.
    pub fn served(&self, address: Option<IpAddr>, owner: &Holder) {
        if let Some(address) = address {
            let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            owners.served(owner, address);
            drop(owners);
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            waiting.retain(|w| w.address != address);
        }
    }

    /// `holder` holds `copy` until the [`HeldCopy`] is dropped: counted in its `drawn` and,
    /// once for all its address's sockets, against its address's share. `None` when the
    /// address may not hold it (see [`Self::may_hold`]).
    pub(super) fn hold_copy(
        self: &Arc<Self>,
        holder: &Arc<Shared>,
        copy: &Arc<Middle>,
    ) -> Option<HeldCopy> {
        let n = copy.len();
        if let Some(&address) = holder.address.get() {
            let mut held = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
            let mut copies = self.copies.lock().unwrap_or_else(|p| p.into_inner());
            let mine = held.get(&address).copied().unwrap_or(0);
            let sockets = copies.entry((address, copy_id(copy))).or_insert(0);
            if *sockets == 0 {
                if !self.within_share(mine, n) {
                    copies.remove(&(address, copy_id(copy)));
                    return None;
                }
                held.insert(address, mine + n);
            }
            *sockets += 1;
        }
        if let Some(charge) = copy.kept().and_then(|k| k.downcast_ref::<Charge>()) {
            let _ = holder.copy_owner.set(charge.owner.clone());
        }
        began_holding(holder, n, crate::clock::unix_ms() as u64);
        self.hold(holder);
        Some(HeldCopy {
            holder: holder.clone(),
            budget: self.clone(),
            copy: copy.clone(),
        })
    }

    /// A socket of `address` no longer holds `copy`.
    pub(super) fn let_go_of(&self, address: IpAddr, copy: &Arc<Middle>) {
        let mut held = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        let mut copies = self.copies.lock().unwrap_or_else(|p| p.into_inner());
        let key = (address, copy_id(copy));
        let Some(sockets) = copies.get_mut(&key) else {
            return;
        };
        *sockets -= 1;
        if *sockets > 0 {
            return;
        }
        copies.remove(&key);
        if let Some(mine) = held.get_mut(&address) {
            *mine = mine.saturating_sub(copy.len());
            if *mine == 0 {
                held.remove(&address);
            }
        }
    }

    /// Counts `holder` among the sockets that may be made to make way (it holds a draw, or
    /// a shared copy, in `drawn`). Those done are swept out once the list has doubled, not
    /// on every call: a crowd joining a large file at once would cost the square of its size.
    pub(super) fn hold(&self, holder: &Arc<Shared>) {
        let mut holders = self.holders.lock().unwrap_or_else(|p| p.into_inner());
        if holders.len() >= self.holders_mark.load(Ordering::Relaxed) {
            holders.retain(|h| {
                h.upgrade()
                    .is_some_and(|h| h.drawn.load(Ordering::Acquire) > 0)
            });
            let mark = (2 * holders.len()).max(HOLDERS_SWEPT_FROM);
            self.holders_mark.store(mark, Ordering::Relaxed);
        }
        holders.push(Arc::downgrade(holder));
    }

    /// A draw of `n` bytes did not fit: holders that took nothing for long, or too slowly,
    /// make way ([`Self::make_way`]), but only
    /// when the node-wide allowance is what is short (for this draw or, when it waits behind
    /// others, for the first of them, whose own refusals make way): a draw refused for its
    /// own address's share, or larger than the whole allowance, would gain nothing from
    /// others making way.
    fn refused(&self, n: usize, now_ms: u64) {
        if n <= self.capacity && self.left.load(Ordering::Acquire) < n {
            self.make_way(now_ms, None);
        }
    }

    /// Closes the holders that have taken nothing for [`MAKE_WAY_AFTER_MS`] at `now_ms`, and
    /// those that have held large messages for longer than [`MAKE_WAY_AFTER_MS`] plus the
    /// time of all they were given since at [`SLOWEST_HOLDER_BYTES_PER_SECOND`]; `among` one
    /// owner's, only holders of copies of its files.
    fn make_way(&self, now_ms: u64, among: Option<&Holder>) {
        let holders = self.holders.lock().unwrap_or_else(|p| p.into_inner());
        for h in holders.iter().filter_map(Weak::upgrade) {
            if h.drawn.load(Ordering::Acquire) == 0 {
                continue;
            }
            if among.is_some_and(|owner| h.copy_owner.get() != Some(owner)) {
                continue;
            }
            let since = h.write_waiting_since.load(Ordering::Acquire);
            let stalled = since > 0 && now_ms.saturating_sub(since) >= MAKE_WAY_AFTER_MS;
            let held_since = h.holding_since.load(Ordering::Acquire);
            let held = h.held_bytes.load(Ordering::Acquire);
            let allowed_ms = MAKE_WAY_AFTER_MS + held * 1000 / SLOWEST_HOLDER_BYTES_PER_SECOND;
            let dawdling = held_since > 0 && now_ms.saturating_sub(held_since) >= allowed_ms;
            let why = match (stalled, dawdling) {
                (true, _) => {
                    "too slow: took nothing of a large message for 5 s while others waited"
                }
                (false, true) => {
                    "too slow: took a large message slower than 1 MiB/s while others waited"
                }
                (false, false) => continue,
            };
            h.close(CloseCode::TooSlow, why);
            if let Some(&address) = h.address.get() {
                self.stalled_at(address, now_ms);
            }
        }
    }

    /// Remembers that a holder of `address` took nothing while others waited: for
    /// [`STALLED_KEPT_MS`](super::stalled::STALLED_KEPT_MS) the address keeps no place and
    /// comes after every other.
    pub(super) fn stalled_at(&self, address: IpAddr, now_ms: u64) {
        let mut stalled = self.stalled.lock().unwrap_or_else(|p| p.into_inner());
        stalled.remember(address, now_ms);
    }

    /// Whether `address` is remembered as stalled at `now_ms`.
    #[cfg(test)]
    pub(super) fn is_stalled(&self, address: IpAddr, now_ms: u64) -> bool {
        let stalled = self.stalled.lock().unwrap_or_else(|p| p.into_inner());
        stalled.holds(&address, now_ms)
    }

    /// Takes `n` bytes for a socket of `address` (by its limit key) at `now_ms`, if the
    /// budget and the address's share have room, and, for a welcome, after what addresses
    /// waiting ahead of it asked for (the address keeps a place when refused).
    pub(super) fn take_at(
        &self,
        address: Option<IpAddr>,
        n: usize,
        now_ms: u64,
        kind: Draw,
    ) -> bool {
        if n > self.capacity {
            return false;
        }
        let Some(address) = address else {
            return self.take_bytes(n, 0);
        };
        let mut held = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        let holds = |a: &IpAddr| held.get(a).copied().unwrap_or(0);
        let mine = holds(&address);
        if !self.within_share(mine, n) {
            return false;
        }
        if kind == Draw::Member {
            if !self.take_bytes(n, 0) {
                return false;
            }
            held.insert(address, mine + n);
            return true;
        }
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.retain(|w| now_ms.saturating_sub(w.last_ms) < PLACE_KEPT_MS);
        let stalled = self.stalled.lock().unwrap_or_else(|p| p.into_inner());
        let lately_stalled = |a: &IpAddr| stalled.holds(a, now_ms);
        let since = waiting
            .iter()
            .find(|w| w.address == address)
            .map_or(now_ms, |w| w.since_ms);
        let mine_stalled = lately_stalled(&address);
        let my_turn = (mine_stalled, mine, since);
        let most = self.capacity / PROMISED_AT_MOST;
        let promised = waiting
            .iter()
            .filter(|w| w.address != address)
            .filter(|w| (lately_stalled(&w.address), holds(&w.address), w.since_ms) < my_turn)
            .fold(0usize, |sum, w| sum.saturating_add(w.bytes.min(most)));
        drop(stalled);
        if !self.take_bytes(n, promised) {
            if mine_stalled {
                waiting.retain(|w| w.address != address);
            } else if let Some(w) = waiting.iter_mut().find(|w| w.address == address) {
                (w.bytes, w.last_ms) = (n, now_ms);
            } else if waiting.len() < MOST_WAITING {
                waiting.push(Waiter {
                    address,
                    bytes: n,
                    since_ms: now_ms,
                    last_ms: now_ms,
                });
            }
            return false;
        }
        waiting.retain(|w| w.address != address);
        drop(waiting);
        if kind != Draw::Copy {
            held.insert(address, mine + n);
        }
        true
    }

    /// Takes `n` bytes if that leaves at least `promised` (to addresses waiting ahead).
    fn take_bytes(&self, n: usize, promised: usize) -> bool {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(n.saturating_add(promised))
                    .map(|_| left - n)
            })
            .is_ok()
    }

    /// How many addresses are remembered as stalled.
    #[cfg(test)]
    pub(super) fn stalled_len(&self) -> usize {
        self.stalled.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// What is left of the allowance.
    #[cfg(test)]
    pub(crate) fn left(&self) -> usize {
        self.left.load(Ordering::Acquire)
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
