//! Each account's, and each client address's, share of the memory open rooms take
//! (`ATRIUM_ROOM_MEMORY_SHARE`).
//!
//! A room stays in memory while anyone is in it, so without a share one free account
//! could fill the node: forty files of 1 MB, each held open by one silent guest with the
//! view key, kept a node at its memory mark and every other owner's file refused 1013
//! (the re-check of the sixth review). A room's load cost counts against the account
//! that owns its file and against the client address whose join (or download) opened it,
//! for as long as the room is open. A room whose account and address hold nothing opens
//! whatever its size (within the node's budget), and an account's largest room is not
//! counted against its share (see [`Tally`]); past the share, joins that would open
//! another are refused 1013 and told to come back later. The owner opening their own file,
//! and anyone who may edit it (an edit key, an edit grant), is refused for their address's
//! share only (their rooms still count against the account's): otherwise a guest holding
//! the owner's one large public file open would keep the owner, and the people they work
//! with, out of all their others (the ninth review: a stranger on an 11 MB public file
//! kept a colleague with the edit key out of the owner's other file, 4 joins of 4). The app's own account (the server API's files)
//! has no account share: its files are every app user's.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ids::AccountId;

/// Who opens a room: the client address of the join or download, its account, and
/// whether it may edit the file.
#[derive(Debug, Clone, Default)]
pub struct Opener {
    pub address: Option<IpAddr>,
    pub account: Option<AccountId>,
    /// An editor of the file (its owner, an edit key, an edit grant): refused for its
    /// address's share only, as the owner is.
    pub editor: bool,
}

/// What open rooms hold, by account and by opening address.
pub struct RoomShares {
    /// Bytes each may hold (`u64::MAX`: no share).
    share: u64,
    /// The account without a share: the app's own.
    app: AccountId,
    /// Whether an account's largest room is left out of its share (see [`Tally`]): for
    /// open rooms, not for other memory held by whole documents (unread answers).
    account_beside_largest: bool,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    by_account: HashMap<AccountId, Tally>,
    by_address: HashMap<IpAddr, Tally>,
    /// When a room was last refused for each share (kept only while the share holds
    /// something): its rooms nobody is in then leave early to make way.
    wanted_account: HashMap<AccountId, Instant>,
    wanted_address: HashMap<IpAddr, Instant>,
}

impl Held {
    /// Counts a room of `bytes` (that counted `was` until now: 0 for a new one) against
    /// `account`'s and `address`'s shares.
    fn count(
        &mut self,
        account: Option<&AccountId>,
        address: Option<IpAddr>,
        was: u64,
        bytes: u64,
    ) {
        if let Some(a) = account {
            self.by_account
                .entry(a.clone())
                .or_default()
                .resize(was, bytes);
        }
        if let Some(a) = address {
            self.by_address.entry(a).or_default().resize(was, bytes);
        }
    }
}

/// What one account's (or address's) open rooms hold: in all, and room by room, so that
/// the largest is known.
///
/// A room opens whatever its size while its key holds nothing. For an account's rooms, the
/// largest is not counted against the share at all, so the share is for the rooms beside
/// it: counting it let one stranger holding an owner's one large public file keep every
/// reader out of all the owner's other files (the ninth review: an 11 MB file); now that
/// takes a share's worth of rooms beside it, and an account holds at most its largest room
/// and a share. An address's rooms are counted whole (one address holds at most the larger
/// of one room and a share): the stranger and the owner's readers come from different
/// addresses, and an address that could hold a large room beside a full share would double
/// what one attacker's address holds.
#[derive(Default)]
struct Tally {
    total: u64,
    /// Rooms by size: how many hold each.
    sizes: BTreeMap<u64, u32>,
}

impl Tally {
    fn largest(&self) -> u64 {
        self.sizes.keys().next_back().copied().unwrap_or(0)
    }

    /// Whether a room of `bytes` more fits a `share`: counting everything (always when
    /// nothing is held), or, `beside_largest`, what the rooms hold beside the largest of
    /// them, that one among them.
    fn fits(&self, bytes: u64, share: u64, beside_largest: bool) -> bool {
        let all = self.total.saturating_add(bytes);
        if beside_largest {
            all.saturating_sub(self.largest().max(bytes)) <= share
        } else {
            self.total == 0 || all <= share
        }
    }

    /// A room that held `was` (0: a new room) now holds `bytes` (0: it closed).
    fn resize(&mut self, was: u64, bytes: u64) {
        if was > 0 {
            if let Some(n) = self.sizes.get_mut(&was) {
                *n -= 1;
                if *n == 0 {
                    self.sizes.remove(&was);
                }
            }
        }
        if bytes > 0 {
            *self.sizes.entry(bytes).or_insert(0) += 1;
        }
        self.total = self.total.saturating_sub(was).saturating_add(bytes);
    }

    fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }
}

/// How long a refusal makes a share's empty rooms leave early.
const WANTED_FOR: Duration = Duration::from_secs(60);

/// Why a room may not open now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverShare {
    Account,
    Address,
}

impl OverShare {
    /// The close reason a refused joiner gets.
    pub fn reason(&self) -> &'static str {
        match self {
            OverShare::Account => {
                "this account's open files hold their share of the server's memory; try again later"
            }
            OverShare::Address => {
                "files opened from this address hold their share of the server's memory; try again later"
            }
        }
    }
}

/// One open room's part of its account's and address's shares; given back when dropped.
pub struct RoomShare {
    shares: Arc<RoomShares>,
    account: Option<AccountId>,
    address: Option<IpAddr>,
    bytes: u64,
}

impl RoomShares {
    /// Shares of memory held by whole documents apart from rooms (unread answers): each
    /// key's holdings counted whole.
    pub fn new(share: u64) -> Arc<Self> {
        Self::with(share, false)
    }

    /// Shares of open rooms: an account's largest room is not counted (see [`Tally`]).
    pub fn for_rooms(share: u64) -> Arc<Self> {
        Self::with(share, true)
    }

    fn with(share: u64, account_beside_largest: bool) -> Arc<Self> {
        Arc::new(Self {
            share,
            app: crate::apptoken::owner_for(None),
            account_beside_largest,
            held: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a room of `owner`'s costing `bytes`, opened by `opener`, fits now.
    pub fn check(&self, owner: &AccountId, opener: &Opener, bytes: u64) -> Result<(), OverShare> {
        let mut held = self.lock();
        self.check_in(&mut held, owner, opener, bytes)
    }

    /// As [`Self::check`]; a refusal marks the share wanted.
    fn check_in(
        &self,
        held: &mut Held,
        owner: &AccountId,
        opener: &Opener,
        bytes: u64,
    ) -> Result<(), OverShare> {
        let exempt = opener.editor || opener.account.as_ref() == Some(owner);
        let beside = self.account_beside_largest;
        if *owner != self.app
            && !exempt
            && !fits(&held.by_account, owner, bytes, self.share, beside)
        {
            held.wanted_account.insert(owner.clone(), Instant::now());
            return Err(OverShare::Account);
        }
        let address = opener.address;
        if let Some(a) = address.filter(|a| !fits(&held.by_address, a, bytes, self.share, false)) {
            held.wanted_address.insert(a, Instant::now());
            return Err(OverShare::Address);
        }
        Ok(())
    }

    /// Takes `bytes` of `owner`'s and `opener`'s address's shares for a room about to open.
    pub fn take(
        self: &Arc<Self>,
        owner: &AccountId,
        opener: &Opener,
        bytes: u64,
    ) -> Result<RoomShare, OverShare> {
        let mut held = self.lock();
        self.check_in(&mut held, owner, opener, bytes)?;
        let address = opener.address;
        let account = (*owner != self.app).then(|| owner.clone());
        held.count(account.as_ref(), address, 0, bytes);
        Ok(RoomShare {
            shares: self.clone(),
            account,
            address,
            bytes,
        })
    }

    /// Takes `bytes` of `owner`'s share alone, checked for `opener` as [`Self::take`] checks
    /// it (for what is held once whoever holds it: a document answer's copy).
    pub fn take_account(
        self: &Arc<Self>,
        owner: &AccountId,
        opener: &Opener,
        bytes: u64,
    ) -> Result<RoomShare, OverShare> {
        let without_address = Opener {
            address: None,
            ..opener.clone()
        };
        self.take(owner, &without_address, bytes)
    }

    /// Takes `bytes` of `address`'s share alone (for each address that holds a copy).
    pub fn take_address(
        self: &Arc<Self>,
        address: IpAddr,
        bytes: u64,
    ) -> Result<RoomShare, OverShare> {
        // The app's account has no account share: only the address's is counted.
        let app = self.app.clone();
        let opener = Opener {
            address: Some(address),
            account: None,
            editor: true,
        };
        self.take(&app, &opener, bytes)
    }

    /// Bytes `owner`'s open rooms hold now.
    pub fn held_by(&self, owner: &AccountId) -> u64 {
        self.lock().by_account.get(owner).map_or(0, |t| t.total)
    }
}

/// Whether a room of `bytes` more fits `key`'s share (see [`Tally`]).
fn fits<K: Hash + Eq>(
    held: &HashMap<K, Tally>,
    key: &K,
    bytes: u64,
    share: u64,
    beside_largest: bool,
) -> bool {
    held.get(key)
        .is_none_or(|t| t.fits(bytes, share, beside_largest))
}

/// Gives back a room of `bytes` of `key`'s share; a share that holds nothing is forgotten,
/// and whether it was wanted with it.
fn give_back<K: Hash + Eq>(
    held: &mut HashMap<K, Tally>,
    wanted: &mut HashMap<K, Instant>,
    key: &K,
    bytes: u64,
) {
    if let Some(t) = held.get_mut(key) {
        t.resize(bytes, 0);
        if t.is_empty() {
            held.remove(key);
            wanted.remove(key);
        }
    }
}

impl RoomShare {
    /// Whether a room was refused for its account's or its address's share within the last
    /// minute: a room nobody is in then leaves early, so its owner (or that address) may
    /// open another. Without it, an owner's own files left open kept them out of their next
    /// one for the rooms' idle time, 10 minutes (the seventh review).
    pub fn wanted(&self) -> bool {
        let held = self.shares.lock();
        let recent = |t: Option<&Instant>| t.is_some_and(|t| t.elapsed() < WANTED_FOR);
        self.account
            .as_ref()
            .is_some_and(|a| recent(held.wanted_account.get(a)))
            || self
                .address
                .is_some_and(|a| recent(held.wanted_address.get(&a)))
    }

    /// Counts `bytes` for the room from now on, when that is more than it counted (a loaded
    /// document found to hold more than its estimate): over the share or not, since the
    /// room is open; the next room of its account or address is judged with it.
    pub fn grow_to(&mut self, bytes: u64) {
        if bytes <= self.bytes {
            return;
        }
        self.shares
            .lock()
            .count(self.account.as_ref(), self.address, self.bytes, bytes);
        self.bytes = bytes;
    }
}

impl Drop for RoomShare {
    fn drop(&mut self) {
        let held = &mut *self.shares.lock();
        if let Some(a) = &self.account {
            give_back(
                &mut held.by_account,
                &mut held.wanted_account,
                a,
                self.bytes,
            );
        }
        if let Some(a) = &self.address {
            give_back(
                &mut held.by_address,
                &mut held.wanted_address,
                a,
                self.bytes,
            );
        }
    }
}

/// Reads the setting: a size (bytes, or with K, M, G), `auto` (an eighth of the memory
/// budget, as `0`), or `off`.
pub fn parse_share(s: &str) -> Result<u64, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        return Ok(u64::MAX);
    }
    crate::memory::parse_size(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A guest from `address`.
    fn at(address: IpAddr) -> Opener {
        Opener {
            address: Some(address),
            account: None,
            editor: false,
        }
    }

    /// A guest from 10.0.`a`.`b`.
    fn from(a: u8, b: u8) -> Opener {
        at([10, 0, a, b].into())
    }

    #[test]
    fn one_large_room_does_not_keep_an_accounts_readers_out() {
        let shares = RoomShares::for_rooms(100);
        let owner = AccountId::generate();
        // A stranger holds the owner's one large public file open.
        let _public = shares
            .take(&owner, &from(0, 9), 300)
            .expect("one of any size");
        // Readers of the owner's other files, from other addresses, get a share beside it.
        let readers: Vec<_> = (0..4u8)
            .map(|k| shares.take(&owner, &from(1, k), 25))
            .collect();
        assert!(
            readers.iter().all(Result::is_ok),
            "a share beside the large room"
        );
        assert_eq!(
            shares.check(&owner, &from(2, 1), 1),
            Err(OverShare::Account),
            "past the share beside it"
        );
        assert_eq!(shares.held_by(&owner), 400);
        // A room larger than the largest becomes the one not counted.
        let shares = RoomShares::for_rooms(100);
        let _small = shares.take(&owner, &from(0, 1), 90).expect("first");
        assert!(
            shares.check(&owner, &from(0, 2), 500).is_ok(),
            "90 beside it"
        );
        assert!(
            shares.check(&owner, &from(0, 2), 10).is_ok(),
            "10 beside 90"
        );
        let _more = shares.take(&owner, &from(0, 3), 80).expect("80 beside 90");
        assert_eq!(
            shares.check(&owner, &from(0, 2), 500),
            Err(OverShare::Account),
            "170 beside it"
        );
    }

    #[test]
    fn an_address_and_unread_answers_count_every_room() {
        // One address: one room of any size, then everything counted.
        let shares = RoomShares::for_rooms(100);
        let (a, b) = (AccountId::generate(), AccountId::generate());
        let _large = shares.take(&a, &from(0, 1), 300).expect("one of any size");
        assert_eq!(
            shares.check(&b, &from(0, 1), 1),
            Err(OverShare::Address),
            "nothing beside a room over the share"
        );
        // Answers: an account's too.
        let answers = RoomShares::new(100);
        let _copy = answers.take(&a, &from(0, 1), 300).expect("one of any size");
        assert_eq!(answers.check(&a, &from(0, 2), 1), Err(OverShare::Account));
    }

    #[test]
    fn the_owner_and_editors_are_refused_for_their_address_only() {
        let shares = RoomShares::for_rooms(100);
        let owner = AccountId::generate();
        let home: IpAddr = [10, 0, 0, 8].into();
        // Guests hold the owner's large files open, a share beside the largest.
        let _public = shares
            .take(&owner, &from(0, 9), 300)
            .expect("one of any size");
        let _also = shares
            .take(&owner, &from(0, 10), 100)
            .expect("a share beside it");
        assert_eq!(shares.check(&owner, &at(home), 10), Err(OverShare::Account));
        let by_owner = Opener {
            address: Some(home),
            account: Some(owner.clone()),
            editor: true,
        };
        let _private = shares
            .take(&owner, &by_owner, 10)
            .expect("the owner's own file");
        assert_eq!(shares.held_by(&owner), 410, "still counted");
        // Someone the owner works with, with another file's edit key, from another address.
        let colleague = Opener {
            editor: true,
            ..from(0, 7)
        };
        let _shared = shares
            .take(&owner, &colleague, 10)
            .expect("an editor of the owner's file");
        assert_eq!(shares.held_by(&owner), 420, "counted too");
        // A reader is still held to the account's share.
        assert_eq!(
            shares.check(&owner, &from(0, 6), 10),
            Err(OverShare::Account)
        );
    }

    #[test]
    fn an_account_and_an_address_open_rooms_up_to_their_share() {
        let shares = RoomShares::for_rooms(100);
        let (owner, other) = (AccountId::generate(), AccountId::generate());
        let here: IpAddr = [10, 0, 0, 1].into();
        let there: IpAddr = [10, 0, 0, 2].into();
        let first = shares
            .take(&owner, &at(here), 300)
            .expect("one of any size");
        let beside = shares
            .take(&owner, &at(there), 100)
            .expect("a share beside it");
        assert_eq!(
            shares.take(&owner, &from(0, 3), 1).err(),
            Some(OverShare::Account)
        );
        drop(beside);
        assert_eq!(
            shares.take(&other, &at(here), 1).err(),
            Some(OverShare::Address)
        );
        let other_room = shares.take(&other, &at(there), 60).expect("its own share");
        assert!(
            first.wanted(),
            "rooms were refused for its account's and address's shares"
        );
        assert!(!other_room.wanted(), "nothing was refused for its own yet");
        // `other` holds 100 (its largest) and 60 + 40 beside it.
        let _largest = shares
            .take(&other, &Opener::default(), 100)
            .expect("a larger room: the one not counted");
        let _more = shares
            .take(&other, &Opener::default(), 40)
            .expect("up to the share");
        assert_eq!(
            shares.check(&other, &Opener::default(), 1),
            Err(OverShare::Account)
        );
        assert!(other_room.wanted(), "now its account's share is wanted");
        assert_eq!(shares.held_by(&owner), 300);
        let mut first = first;
        first.grow_to(350);
        first.grow_to(200);
        assert_eq!(shares.held_by(&owner), 350, "grown, never shrunk");
        drop(first);
        assert_eq!(shares.held_by(&owner), 0, "given back when the room ends");
        assert!(shares.check(&owner, &at(here), 100).is_ok());
        // The app's own files have no account share.
        let app = crate::apptoken::owner_for(None);
        let _a = shares.take(&app, &Opener::default(), 500).expect("app");
        assert!(shares.take(&app, &Opener::default(), 500).is_ok());
        assert_eq!(shares.held_by(&app), 0);
    }

    #[test]
    fn a_grown_room_is_counted_at_its_new_size() {
        let shares = RoomShares::for_rooms(100);
        let owner = AccountId::generate();
        let mut a = shares.take(&owner, &Opener::default(), 50).expect("a");
        let b = shares.take(&owner, &Opener::default(), 60).expect("b");
        // 50 beside the largest (60).
        assert!(shares.check(&owner, &Opener::default(), 50).is_ok());
        a.grow_to(120);
        // Now 60 beside the largest (120).
        assert!(shares.check(&owner, &Opener::default(), 40).is_ok());
        assert_eq!(
            shares.check(&owner, &Opener::default(), 41),
            Err(OverShare::Account)
        );
        drop((a, b));
        assert_eq!(shares.held_by(&owner), 0);
        assert!(shares.lock().by_account.is_empty(), "nothing kept for it");
    }

    #[test]
    fn the_setting_reads_sizes_auto_and_off() {
        assert_eq!(parse_share("64M"), Ok(64 << 20));
        assert_eq!(parse_share("auto"), Ok(0));
        assert_eq!(parse_share("off"), Ok(u64::MAX));
        assert!(parse_share("lots").is_err());
    }
}
