//! Storage per account (`ATRIUM_STORAGE_PER_ACCOUNT`): what an account's files keep in
//! the store (their documents, the patches of their logs, their versions) is held to a
//! limit, so one free account cannot fill the disk every file shares.
//!
//! The store measures an owner's bytes with one query ([`Store::stored_bytes`]). A
//! request that adds a whole document or a version (a creation, a named version, a
//! restore) measures first and waits for the answer ([`Storage::check`]). A room cannot
//! wait on every patch: it asks [`Storage::may_grow`], answered from the owner's last
//! measure plus what this node added for the owner since, and a new measure
//! starts in the background once the last is [`REMEASURE`] old. So a node stops an
//! owner's growth within one patch of the limit, and what other nodes add is seen at the
//! next measure, at most [`REMEASURE`] later.
//!
//! At the limit, creations, named versions and restores answer 403 `storage-full`;
//! patches that would grow a document are refused with `too-large` (those that do not
//! still land, so people can delete their way back under); automatic versions wait. The
//! app's own account (`owner_for(None)`, the server API's files) is not limited; but on
//! each of its files, what the people who came by a link key keep is held to their share
//! of the file's own bytes (a [`Holder::File`]), so a public edit link to one of the app's
//! files cannot fill the disk either.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ids::AccountId;
use crate::store::{FileRecord, Holder, Store, StoreError};

/// How old an owner's measure may be before a room's question starts a new one.
pub const REMEASURE: Duration = Duration::from_secs(10);
/// How old a measure a request may still use.
const FRESH: Duration = Duration::from_secs(1);
/// Owners remembered at most; those not asked about for [`FORGET`] go first.
const REMEMBERED: usize = 10_000;
const FORGET: Duration = Duration::from_secs(600);

/// The message of every refusal at the limit, on the socket and over HTTP.
pub const FULL: &str = "the file's owner has used all of their storage \
    (ATRIUM_STORAGE_PER_ACCOUNT); delete files, versions or content to make room";

/// The message when the link's guests have filled their share.
pub const LINK_SHARE_FULL: &str = "people with the file's link have used their share of \
    the owner's storage (half of ATRIUM_STORAGE_PER_ACCOUNT; of the file's own bytes on the \
    app's files); the owner, or the app's server, can delete versions to make room";

/// How much of an owner's storage a request or a patch may fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// All of it: the owner, and people the app grants the file to.
    Whole,
    /// Half: people who came by a link key (their patches, named versions and restores),
    /// so a guest with the edit key of a public file cannot fill the storage the owner
    /// works in.
    Link,
}

impl Share {
    /// The share of someone who came by a link key (`by_link`), or of anyone else.
    pub fn by_link(by_link: bool) -> Self {
        match by_link {
            true => Share::Link,
            false => Share::Whole,
        }
    }

    /// What `share` may fill of a `whole` limit.
    pub fn of(self, whole: u64) -> u64 {
        match self {
            Share::Whole => whole,
            Share::Link => whole / 2,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The owner has no room for what was asked.
    #[error("{FULL}")]
    Full,
    /// The owner has room, but not within the link's guests' share of it.
    #[error("{LINK_SHARE_FULL}")]
    LinkShareFull,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl StorageError {
    /// The refusal for a limit met: the whole (`Full`) or the link's share of it.
    pub fn full(share: Share) -> Self {
        match share {
            Share::Whole => StorageError::Full,
            Share::Link => StorageError::LinkShareFull,
        }
    }
}

/// An owner as this node knows it.
#[derive(Default)]
struct Owner {
    /// Bytes at the newest measure to land (none yet: growth is allowed until one does).
    measured: Option<u64>,
    /// Bytes this node added for the owner since it knew it (rooms' patches, requests'
    /// documents and versions): it only grows, so measures are placed against it.
    added: u64,
    /// `added` when the measure in `measured` began: what came after is not in it.
    added_at_measure: u64,
    /// When the newest measure began.
    began: Option<Instant>,
    /// A background measure is under way.
    measuring: bool,
    /// Last asked about.
    asked: Option<Instant>,
}

impl Owner {
    fn used(&self) -> Option<u64> {
        let since = self.added.saturating_sub(self.added_at_measure);
        self.measured.map(|m| m.saturating_add(since))
    }

    /// A measure that began when `added` was `from` found `bytes`: kept unless a measure
    /// that began later has landed already (answers may land out of order).
    fn landed(&mut self, from: u64, bytes: u64) {
        if self.measured.is_none() || from >= self.added_at_measure {
            self.measured = Some(bytes);
            self.added_at_measure = from;
        }
    }
}

pub struct Storage {
    /// The limit and the store that measures (`None`: no limit).
    limited: Option<(u64, Arc<dyn Store>)>,
    /// The account exempt from the limit: the app's own.
    app: AccountId,
    owners: Mutex<HashMap<Holder, Owner>>,
    refusals: prometheus::IntCounterVec,
}

impl Storage {
    /// `limit` 0 turns the limit off.
    pub fn new(limit: u64, store: Arc<dyn Store>, metrics: &crate::metrics::Metrics) -> Self {
        Self {
            limited: (limit > 0).then_some((limit, store)),
            app: crate::apptoken::owner_for(None),
            owners: Mutex::default(),
            refusals: metrics.storage_refusals.clone(),
        }
    }

    /// No limit for anyone (rooms' unit tests).
    pub fn unlimited(metrics: &crate::metrics::Metrics) -> Self {
        Self {
            limited: None,
            app: crate::apptoken::owner_for(None),
            owners: Mutex::default(),
            refusals: metrics.storage_refusals.clone(),
        }
    }

    /// Whose bytes hold what is kept in `file`: its owner's, but each file of the app's
    /// own account for itself.
    pub fn holder(&self, file: &FileRecord) -> Holder {
        match file.owner == self.app {
            true => Holder::File(file.id.clone()),
            false => Holder::Account(file.owner.clone()),
        }
    }

    /// The limit `share` meets at `holder`, and the store that measures; `None` when
    /// nothing is held: no limit set, the app's account, or one of its files for anyone
    /// but the link's guests.
    fn limit_for(&self, holder: &Holder, share: Share) -> Option<(u64, &Arc<dyn Store>)> {
        let (whole, store) = self.limited.as_ref()?;
        match (holder, share) {
            (Holder::Account(a), _) if *a == self.app => None,
            (Holder::File(_), Share::Whole) => None,
            _ => Some((share.of(*whole), store)),
        }
    }

    /// Whether what is added at `holder` is counted (it may be held for someone).
    fn counted(&self, holder: &Holder) -> bool {
        self.limit_for(holder, Share::Link).is_some()
    }

    /// Counts a refusal at the limit (`what`: one of [`REFUSED_WHAT`]).
    pub fn refused(&self, what: &str) {
        debug_assert!(REFUSED_WHAT.contains(&what), "{what}");
        self.refusals.with_label_values(&[what]).inc();
    }

    /// Measures the owner now (or uses a measure under a second old); `Full` when
    /// `adding` more bytes would pass the limit, else counts them as added.
    pub async fn check(
        &self,
        owner: &AccountId,
        adding: u64,
        what: &str,
    ) -> Result<(), StorageError> {
        let holder = Holder::Account(owner.clone());
        self.check_share(&holder, adding, what, Share::Whole).await
    }

    /// [`Self::check`] against the part of the limit that `share` may fill.
    pub async fn check_share(
        &self,
        owner: &Holder,
        adding: u64,
        what: &str,
        share: Share,
    ) -> Result<(), StorageError> {
        let Some((limit, store)) = self.limit_for(owner, share) else {
            return Ok(());
        };
        let now = Instant::now();
        // A measure walks every row of the owner's files (85 ms for 1,000 files of 1,000
        // patches and 300 versions each): a request within a second of the last one began
        // uses the last answer with what was added since, so an owner costs at most one
        // measure a second from requests however many come at once.
        let (recent, from) = self.owner(owner, now, |o| {
            let fresh = o
                .began
                .is_some_and(|b| now.saturating_duration_since(b) < FRESH);
            let recent = o.used().filter(|_| fresh);
            if recent.is_none() {
                o.began = Some(now);
            }
            (recent, o.added)
        });
        let used = match recent {
            Some(used) => used,
            None => {
                let bytes = store.stored_bytes(owner).await?;
                self.owner(owner, Instant::now(), |o| {
                    o.landed(from, bytes);
                    o.used().unwrap_or(bytes)
                })
            }
        };
        if used.saturating_add(adding) > limit {
            self.refused(what);
            let whole = self.limit_for(owner, Share::Whole).map(|(whole, _)| whole);
            return Err(match share {
                Share::Link if whole.is_none_or(|w| used.saturating_add(adding) <= w) => {
                    StorageError::LinkShareFull
                }
                _ => StorageError::Full,
            });
        }
        // Counted until a measure includes it, so requests within its second add up.
        self.added(owner, adding);
        Ok(())
    }

    /// [`Self::may_grow`] for something a room would keep (`what`: one of
    /// [`REFUSED_WHAT`]): when it may not, the refusal is counted and the limit it meets is
    /// said (the whole, or only the link's share of it).
    pub fn may_keep(
        self: &Arc<Self>,
        owner: &Holder,
        bytes: u64,
        share: Share,
        what: &str,
    ) -> Result<(), Share> {
        if self.may_grow(owner, bytes, share) {
            return Ok(());
        }
        self.refused(what);
        match share == Share::Link && self.may_grow(owner, bytes, Share::Whole) {
            true => Err(Share::Link),
            false => Err(Share::Whole),
        }
    }

    /// Whether a room may grow the owner's files by `bytes` more, from what this node
    /// knows now; starts a new measure when the last is stale. Never waits.
    pub fn may_grow(self: &Arc<Self>, owner: &Holder, bytes: u64, share: Share) -> bool {
        let Some((limit, store)) = self.limit_for(owner, share) else {
            return true;
        };
        let now = Instant::now();
        let (used, start) = self.owner(owner, now, |o| {
            let stale = o
                .began
                .is_none_or(|b| now.saturating_duration_since(b) >= REMEASURE);
            let start = stale && !o.measuring;
            if start {
                o.began = Some(now);
                o.measuring = true;
            }
            (o.used(), start.then_some(o.added))
        });
        if let Some(from) = start {
            self.measure_later(owner.clone(), store.clone(), from);
        }
        used.is_none_or(|u| u.saturating_add(bytes) <= limit)
    }

    /// This node added `bytes` to what the owner keeps (a patch, a version).
    pub fn added(&self, owner: &Holder, bytes: u64) {
        if self.counted(owner) && bytes > 0 {
            self.owner(owner, Instant::now(), |o| {
                o.added = o.added.saturating_add(bytes)
            });
        }
    }

    /// Something of the owner's was deleted: the next question measures again, so the
    /// room it made shows at once.
    pub fn remeasure(&self, owner: &Holder) {
        if self.counted(owner) {
            self.owner(owner, Instant::now(), |o| o.began = None);
        }
    }

    fn measure_later(self: &Arc<Self>, owner: Holder, store: Arc<dyn Store>, from: u64) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.owner(&owner, Instant::now(), |o| o.measuring = false);
            return;
        };
        let this = self.clone();
        runtime.spawn(async move {
            let answer = store.stored_bytes(&owner).await;
            this.owner(&owner, Instant::now(), |o| {
                o.measuring = false;
                match answer {
                    Ok(bytes) => o.landed(from, bytes),
                    // Tried again at the next question after REMEASURE.
                    Err(e) => {
                        tracing::warn!(holder = %owner, error = %e, "could not measure storage")
                    }
                }
            });
        });
    }

    /// Runs `f` on the owner's entry (made if new), under the lock.
    fn owner<T>(&self, owner: &Holder, now: Instant, f: impl FnOnce(&mut Owner) -> T) -> T {
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        // Every patch asks: a known owner costs a lookup, not a copy of its id.
        if let Some(known) = owners.get_mut(owner) {
            known.asked = Some(now);
            return f(known);
        }
        if owners.len() >= REMEMBERED {
            owners.retain(|_, o| {
                o.measuring
                    || o.asked
                        .is_some_and(|a| now.saturating_duration_since(a) < FORGET)
            });
            if owners.len() >= REMEMBERED {
                // Everyone was asked about lately: the idle ones go (measured again if asked).
                owners.retain(|_, o| o.measuring);
            }
        }
        let entry = owners.entry(owner.clone()).or_default();
        entry.asked = Some(now);
        f(entry)
    }
}

/// `ATRIUM_STORAGE_PER_ACCOUNT`: a size as the memory budget takes one (`1GiB`, `512M`,
/// bytes), `0` for no limit; `auto` means nothing here and is refused rather than read as 0.
pub fn parse_limit(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("auto") {
        return Err(format!(
            "{s:?}: give a size (1GiB, 512M, bytes) or 0 for no limit"
        ));
    }
    crate::memory::parse_size(t)
}

/// The `what` label of `atrium_storage_refusals_total`.
pub const REFUSED_WHAT: &[&str] = &["create", "version", "restore", "patch", "checkpoint"];

#[cfg(test)]
mod tests;
