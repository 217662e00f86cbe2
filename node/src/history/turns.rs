//! Work on stored versions: reading one, comparing two, restoring one. It is the costliest
//! an editor can ask of a node from a link (a version is rebuilt from its chain; a comparison
//! parses two whole documents; a restore diffs one against the file and sends the patch to
//! everyone), so that requests one after another, or many at once, cannot take the node
//! past its memory budget:
//!
//! - at most [`AT_ONCE`] such pieces of work run at a time on the node; others wait up to
//!   [`WAIT`] for a turn, then are refused (HTTP: 503 `unavailable` with `Retry-After`);
//! - one client address (an IPv6 one by its /64) and one file's party (its owner, an
//!   app-token person, or everyone who came by the link together) have at most
//!   [`PER_ADDRESS`] and [`PER_FILE`] pieces running or waiting; more are refused (429
//!   `rate-limited`), so one address, or many working on one file, cannot fill the queue
//!   everyone waits in (the sixth review: 200 connections of a free account comparing a
//!   1.9 MB document made an owner's read of a one-node version wait 10 s), and the link's
//!   guests cannot take the owner's places (the tenth review: guests comparing from six
//!   addresses made the owner's restores, reads and compares 429);
//! - each reserves from the memory budget, before it starts, what it needs: `cost` bytes
//!   per byte of document, for the largest document it will rebuild (versions keep their
//!   document's size; the room tells the current one's), and at most what half the
//!   budget's room allows (so other work still gets the rest). Work that does not fit is
//!   refused (503), and served once the node has room again. Only versions saved before
//!   stores kept their size are planned for the largest document a file may hold (a
//!   reading after the tenth review: three reads of one-node versions at once kept seven eighths of the
//!   budget's room promised, and other people's uploads were refused at the budget).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{Stored, VersionInfo};
use crate::ids::FileId;
use crate::limits::Party;
use crate::memory::{MemoryGuard, Reservation};
use crate::metrics::Metrics;
use crate::store::StoreError;

/// Pieces of history work that run at once on a node.
pub const AT_ONCE: usize = 3;
/// How long a piece waits for its turn before it is answered 503.
pub const WAIT: Duration = Duration::from_secs(10);
/// Pieces one client address may have running or waiting: two, as the browser client asks
/// for a comparison and the version beside it at once; fewer than [`AT_ONCE`], so one
/// address never holds every turn.
pub const PER_ADDRESS: usize = 2;
/// Pieces one file may have running or waiting for one party, from every address together:
/// many addresses working on one file (the re-check of the sixth review: 40 addresses, one
/// file) hold that file's places, not the node's turns.
pub const PER_FILE: usize = 2;

/// Memory per byte of a rebuilt document: reading one (the document, its answer),
/// comparing two (per byte of each: the texts each is rebuilt from, both documents, and the
/// lists of ids in the answer), restoring one
/// (the document, the room's diff of it, the patch's text, its relay and its journal entry,
/// and the restore version written from it).
pub const READ_COST: u64 = 4;
pub const COMPARE_COST: u64 = 8;
pub const RESTORE_COST: u64 = 12;

/// How large the documents a piece of work rebuilds are, as the document limits count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocSize {
    /// The largest of them is this many bytes.
    Known(usize),
    /// Unknown (a version saved before stores kept its size): at most this many.
    AtMost(usize),
}

impl DocSize {
    /// The size of documents of sizes `a` and `b` rebuilt together: the larger, known when
    /// both are.
    pub fn max(self, other: DocSize) -> DocSize {
        match (self, other) {
            (DocSize::Known(a), DocSize::Known(b)) => DocSize::Known(a.max(b)),
            (a, b) => DocSize::AtMost(a.bytes().max(b.bytes())),
        }
    }

    fn bytes(self) -> usize {
        match self {
            DocSize::Known(n) | DocSize::AtMost(n) => n,
        }
    }
}

/// Why a piece of history work did not start or could not finish.
#[derive(Debug, thiserror::Error)]
pub enum WorkRefused {
    /// The address or the file has its places taken (429, come back in a second).
    #[error("version history work {0} is already under way; wait for it")]
    Places(&'static str),
    /// No turn came within [`WAIT`] (503).
    #[error("the node is busy with version history; try again")]
    NoTurn,
    /// The memory budget has no room for it (503).
    #[error("the server is at its memory budget; try again")]
    NoRoom,
    /// What it would keep does not fit the owner's storage, or the link's share of it
    /// (403).
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The node's turns for history work, and the versions found too large for the memory
/// there was.
pub struct HistoryWork {
    turns: Arc<Semaphore>,
    /// Pieces running or waiting per client address, and per file.
    by_address: Places<IpAddr>,
    by_file: Places<(FileId, Party)>,
    /// Versions (file, id) that did not fit, with the most document bytes they were given:
    /// asked again with no more room, they are refused at once instead of rebuilt in vain
    /// (50 connections asking for a version too large cost a core of refused work).
    too_large: Mutex<HashMap<(FileId, u64), usize>>,
}

/// Versions remembered as too large; the list is forgotten when it would grow past this.
const REMEMBERED: usize = 1024;

impl Default for HistoryWork {
    fn default() -> Self {
        Self {
            turns: Arc::new(Semaphore::new(AT_ONCE)),
            by_address: Arc::default(),
            by_file: Arc::default(),
            too_large: Mutex::new(HashMap::new()),
        }
    }
}

/// A piece of history work that has its places and its turn, before its memory: what it
/// will rebuild is read and measured first (a store read, within the node's turns).
pub struct Turn {
    turn: OwnedSemaphorePermit,
    places: (Place<IpAddr>, Place<(FileId, Party)>),
}

/// A piece of history work under way: its turn, its memory, and the most document bytes it
/// may rebuild.
pub struct Working {
    _turn: OwnedSemaphorePermit,
    _places: (Place<IpAddr>, Place<(FileId, Party)>),
    memory: Reservation,
    /// Bytes of memory per document byte this work takes.
    cost: u64,
    /// The largest document this work may rebuild.
    pub limit: usize,
    /// Whether `limit` is below the document limit: a version over it is refused for want
    /// of memory, not for being too large.
    pub squeezed: bool,
}

impl Working {
    /// Once its documents are rebuilt (the largest `bytes`, counted as the document limits
    /// count them), keeps only what the rest of the work on them takes: a reservation is
    /// sized for the largest document it may meet, up to half the budget's room, and held
    /// whole it kept others' work out (the tenth review: guests comparing a 3.6 MB file in
    /// a loop made most of its owner's comparisons 503).
    pub fn fit(&mut self, bytes: usize) {
        self.memory
            .shrink_to(self.cost.saturating_mul(bytes as u64));
    }
}

impl HistoryWork {
    /// A stored version of `file` rebuilt within what `work` reserved. One found too large
    /// for the room there was is remembered, and refused at once until there is more;
    /// failing within a limit memory set is 503 (try again), else what the store said.
    pub async fn rebuild(
        &self,
        stored: Stored,
        file: &FileId,
        work: &Working,
        metrics: &Metrics,
    ) -> Result<(VersionInfo, String, usize), WorkRefused> {
        let vid = stored.info.id;
        if work.squeezed && self.known_too_large(file, vid, work.limit) {
            return Err(WorkRefused::NoRoom);
        }
        match super::rebuild_within(stored, work.limit, metrics).await {
            Ok(rebuilt) => Ok(rebuilt),
            Err(StoreError::Unavailable(_)) if work.squeezed => {
                self.found_too_large(file, vid, work.limit);
                Err(WorkRefused::NoRoom)
            }
            Err(other) => Err(other.into()),
        }
    }

    /// Whether version `vid` of `file` is known not to fit in `limit` bytes.
    fn known_too_large(&self, file: &FileId, vid: u64, limit: usize) -> bool {
        let known = self.too_large.lock().unwrap_or_else(|p| p.into_inner());
        known.get(&(file.clone(), vid)).is_some_and(|&l| limit <= l)
    }

    /// Remembers that version `vid` of `file` did not fit in `limit` bytes.
    fn found_too_large(&self, file: &FileId, vid: u64, limit: usize) {
        let mut known = self.too_large.lock().unwrap_or_else(|p| p.into_inner());
        if known.len() >= REMEMBERED {
            known.clear();
        }
        let l = known.entry((file.clone(), vid)).or_insert(0);
        *l = (*l).max(limit);
    }

    /// Takes one of `address`'s places and one of `file`'s for `party`, and waits for a turn.
    pub async fn turn(
        &self,
        address: IpAddr,
        file: &FileId,
        party: &Party,
    ) -> Result<Turn, WorkRefused> {
        let address = Place::take(&self.by_address, address, PER_ADDRESS)
            .ok_or(WorkRefused::Places("from this address"))?;
        let file = Place::take(&self.by_file, (file.clone(), party.clone()), PER_FILE)
            .ok_or(WorkRefused::Places("on this file"))?;
        let turn = tokio::time::timeout(WAIT, self.turns.clone().acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
            .ok_or(WorkRefused::NoTurn)?;
        Ok(Turn {
            turn,
            places: (address, file),
        })
    }

    /// [`Self::turn`], then [`Turn::reserve`].
    #[cfg(test)]
    async fn start(
        &self,
        memory: &Arc<MemoryGuard>,
        cost: u64,
        size: DocSize,
        address: IpAddr,
        file: &FileId,
        party: &Party,
    ) -> Result<Working, WorkRefused> {
        self.turn(address, file, party)
            .await?
            .reserve(memory, cost, size)
    }
}

impl Turn {
    /// Reserves memory for documents of `size` at `cost` bytes per byte: for a known size
    /// that (refused when over half the budget's room), else as much of it as half the
    /// room allows.
    pub fn reserve(
        self,
        memory: &Arc<MemoryGuard>,
        cost: u64,
        size: DocSize,
    ) -> Result<Working, WorkRefused> {
        let max_doc = match size {
            // A little over the size, for a document that grew since it was measured.
            DocSize::Known(n) => (n as u64).saturating_add(n as u64 / 8).max(MIN_DOC),
            DocSize::AtMost(n) => n as u64,
        };
        let want = max_doc.saturating_mul(cost);
        let bytes = want.min(memory.room_left() / 2);
        let fits = match size {
            DocSize::Known(_) => bytes == want,
            DocSize::AtMost(_) => bytes >= cost * MIN_DOC,
        };
        let reservation = fits
            .then(|| memory.reserve(bytes))
            .flatten()
            .ok_or(WorkRefused::NoRoom)?;
        Ok(Working {
            _turn: self.turn,
            _places: self.places,
            memory: reservation,
            cost,
            limit: (bytes / cost) as usize,
            squeezed: bytes < want,
        })
    }
}

/// One of an address's places for history work, given back when dropped.
/// Places of one kind (per address, per file) in use, by key; none kept at zero.
type Places<K> = Arc<Mutex<HashMap<K, usize>>>;

/// One of a key's places for history work, given back when dropped.
struct Place<K: std::hash::Hash + Eq + Clone> {
    counts: Places<K>,
    key: K,
}

impl<K: std::hash::Hash + Eq + Clone> Place<K> {
    fn take(counts: &Places<K>, key: K, most: usize) -> Option<Self> {
        let mut all = counts.lock().unwrap_or_else(|p| p.into_inner());
        let n = all.entry(key.clone()).or_insert(0);
        if *n >= most {
            return None;
        }
        *n += 1;
        Some(Self {
            counts: counts.clone(),
            key,
        })
    }
}

impl<K: std::hash::Hash + Eq + Clone> Drop for Place<K> {
    fn drop(&mut self) {
        let mut all = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = all.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                all.remove(&self.key);
            }
        }
    }
}

/// Work that could not rebuild even this much of a document is not started.
const MIN_DOC: u64 = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_too_large_is_refused_until_there_is_more_room() {
        let work = HistoryWork::default();
        let file = FileId::parse("file_1").unwrap();
        assert!(!work.known_too_large(&file, 3, 1000));
        work.found_too_large(&file, 3, 1000);
        assert!(work.known_too_large(&file, 3, 1000));
        assert!(
            work.known_too_large(&file, 3, 10),
            "less room: still too large"
        );
        assert!(
            !work.known_too_large(&file, 3, 2000),
            "more room: tried again"
        );
        assert!(!work.known_too_large(&file, 4, 10), "another version");
    }

    #[tokio::test]
    async fn work_that_knows_its_size_gives_back_the_rest() {
        let work = HistoryWork::default();
        let memory = MemoryGuard::new(crate::stats::rss_bytes() + (256 << 20));
        let file = FileId::parse("f1").unwrap();
        let who: IpAddr = "10.0.0.1".parse().unwrap();
        let room = memory.room_left();
        let mut w = work
            .start(
                &memory,
                COMPARE_COST,
                DocSize::AtMost(64 << 20),
                who,
                &file,
                &Party::Link,
            )
            .await
            .expect("room for it");
        assert!(
            memory.room_left() <= room / 2 + 1,
            "sized for the largest document"
        );
        w.fit(1 << 20);
        assert_eq!(
            memory.room_left(),
            room - COMPARE_COST * (1 << 20),
            "kept what a 1 MiB document takes"
        );
        drop(w);
        assert_eq!(memory.room_left(), room);
    }

    #[tokio::test]
    async fn work_on_documents_of_known_size_reserves_what_they_take() {
        let work = HistoryWork::default();
        let memory = MemoryGuard::new(crate::stats::rss_bytes() + (256 << 20));
        let file = FileId::parse("f1").unwrap();
        let who: IpAddr = "10.0.0.1".parse().unwrap();
        let room = memory.room_left();
        let start = |size| work.start(&memory, READ_COST, size, who, &file, &Party::Owner);
        let one_mib = start(DocSize::Known(1 << 20)).await.expect("room for it");
        let planned = (1 << 20) + (1 << 17);
        assert_eq!(one_mib.limit, planned, "the size and an eighth");
        assert!(!one_mib.squeezed);
        assert_eq!(room - memory.room_left(), READ_COST * planned as u64);
        drop(one_mib);
        let tiny = start(DocSize::Known(10)).await.expect("room for it");
        assert_eq!(
            tiny.limit as u64, MIN_DOC,
            "never less than the smallest plan"
        );
        drop(tiny);
        // More than half the room: refused at once, not squeezed into a rebuild that fails.
        let too_large = start(DocSize::Known(room as usize / 4)).await;
        assert!(matches!(too_large, Err(WorkRefused::NoRoom)));
        assert_eq!(memory.room_left(), room, "nothing kept");
    }

    #[test]
    fn documents_rebuilt_together_are_as_large_as_the_larger() {
        use DocSize::{AtMost, Known};
        assert_eq!(Known(3).max(Known(5)), Known(5));
        assert_eq!(Known(9).max(AtMost(5)), AtMost(9), "unknown if either is");
        assert_eq!(AtMost(64).max(Known(5)), AtMost(64));
    }

    #[tokio::test]
    async fn one_address_and_one_file_have_at_most_their_places() {
        let work = HistoryWork::default();
        let memory = MemoryGuard::new(1 << 34);
        let (a, b, c): (IpAddr, IpAddr, IpAddr) = (
            "10.0.0.1".parse().unwrap(),
            "10.0.0.2".parse().unwrap(),
            "10.0.0.3".parse().unwrap(),
        );
        let (f, g) = (FileId::parse("f1").unwrap(), FileId::parse("g1").unwrap());
        let limited = |r: &Result<Working, WorkRefused>| matches!(r, Err(WorkRefused::Places(_)));
        let start_as = |who: IpAddr, file: &FileId, party: Party| {
            let (work, memory, file) = (&work, &memory, file.clone());
            async move {
                work.start(
                    memory,
                    READ_COST,
                    DocSize::AtMost(1 << 20),
                    who,
                    &file,
                    &party,
                )
                .await
            }
        };
        let start = |who: IpAddr, file: &FileId| start_as(who, file, Party::Link);
        let first = start(a, &f).await.expect("a on f");
        let second = start(a, &f).await.expect("a's second, as the browser asks");
        assert!(limited(&start(a, &g).await), "a's places");
        assert!(limited(&start(b, &f).await), "f's places");
        // The owner's places are their own: the link's guests holding theirs do not take
        // them (a free address, and the turn the third piece may have).
        let owner = start_as(c, &f, Party::Owner)
            .await
            .expect("the owner's own place");
        drop(owner);
        // Another address on another file gets the third turn at once.
        let other = start(c, &g).await.expect("c on g");
        drop(first);
        let again = start(b, &f).await.expect("f's place came back");
        drop((second, again, other));
        assert!(work.by_address.lock().unwrap().is_empty(), "nothing kept");
        assert!(work.by_file.lock().unwrap().is_empty(), "nothing kept");
    }
}
