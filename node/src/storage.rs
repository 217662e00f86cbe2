//! Storage per account (`ATRIUM_STORAGE_PER_ACCOUNT`): what an account's files keep in
//! the store (their documents, the patches of their logs, their versions) is held to a
//! limit, so one free account cannot fill the disk every file shares.
//!
//! The store measures an owner's bytes with one query ([`Store::stored_bytes`]). A
//! request that adds a whole document or a version (a creation, a named version, a
//! restore) measures first and waits for the answer ([`Storage::check`]). A room cannot
//! wait on every patch: it asks [`Storage::may_grow`], answered from the owner's last
//! measure plus what this node's rooms logged for the owner since, and a new measure
//! starts in the background once the last is [`REMEASURE`] old. So a node stops an
//! owner's growth within one patch of the limit, and what other nodes add is seen at the
//! next measure, at most [`REMEASURE`] later.
//!
//! At the limit, creations, named versions and restores answer 403 `storage-full`;
//! patches that would grow a document are refused with `too-large` (those that do not
//! still land, so people can delete their way back under); automatic versions wait. The
//! app's own account (`owner_for(None)`, the server API's files) is not limited.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ids::AccountId;
use crate::store::{Store, StoreError};

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

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The owner has no room for what was asked.
    #[error("{FULL}")]
    Full,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An owner as this node knows it.
#[derive(Default)]
struct Owner {
    /// Bytes at the last measure (none yet: growth is allowed until one lands).
    measured: Option<u64>,
    /// Bytes this node's rooms logged for the owner since that measure began.
    logged: u64,
    /// When the last measure began.
    began: Option<Instant>,
    /// `logged` when the measure under way began (it is in that measure's answer).
    logged_at_start: Option<u64>,
    /// Last asked about.
    asked: Option<Instant>,
}

impl Owner {
    fn used(&self) -> Option<u64> {
        self.measured.map(|m| m.saturating_add(self.logged))
    }
}

pub struct Storage {
    /// The limit and the store that measures (`None`: no limit).
    limited: Option<(u64, Arc<dyn Store>)>,
    /// The account exempt from the limit: the app's own.
    app: AccountId,
    owners: Mutex<HashMap<AccountId, Owner>>,
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

    fn limit_for(&self, owner: &AccountId) -> Option<(u64, &Arc<dyn Store>)> {
        let (limit, store) = self.limited.as_ref()?;
        (*owner != self.app).then_some((*limit, store))
    }

    /// Counts a refusal at the limit (`what`: one of [`REFUSED_WHAT`]).
    pub fn refused(&self, what: &str) {
        debug_assert!(REFUSED_WHAT.contains(&what), "{what}");
        self.refusals.with_label_values(&[what]).inc();
    }

    /// Measures the owner now; `Full` when `adding` more bytes would pass the limit.
    pub async fn check(
        &self,
        owner: &AccountId,
        adding: u64,
        what: &str,
    ) -> Result<(), StorageError> {
        let Some((limit, store)) = self.limit_for(owner) else {
            return Ok(());
        };
        let began = Instant::now();
        // A measure walks every row of the owner's files (85 ms for 1,000 files of 1,000
        // patches and 300 versions each): requests within a second of one, or of one under
        // way, use the last answer with what was logged since, so an owner costs at most
        // one measure a second however many requests come at once.
        let (logged_before, recent) = self.owner(owner, began, |o| {
            let fresh = o
                .began
                .is_some_and(|b| began.saturating_duration_since(b) < FRESH);
            let recent = o.used().filter(|_| fresh);
            if recent.is_none() {
                o.began = Some(began);
            }
            (o.logged, recent)
        });
        let used = match recent {
            Some(used) => used,
            None => self.measure_now(owner, store, logged_before).await?,
        };
        if used.saturating_add(adding) > limit {
            self.refused(what);
            return Err(StorageError::Full);
        }
        // Counted until the next measure, so requests within its second add up.
        self.logged(owner, adding);
        Ok(())
    }

    /// Measures the owner and keeps the answer; answers what it uses now.
    async fn measure_now(
        &self,
        owner: &AccountId,
        store: &Arc<dyn Store>,
        logged_before: u64,
    ) -> Result<u64, StoreError> {
        let measured = store.stored_bytes(owner).await?;
        Ok(self.owner(owner, Instant::now(), |o| {
            o.measured = Some(measured);
            o.logged = o.logged.saturating_sub(logged_before);
            if let Some(at_start) = o.logged_at_start.as_mut() {
                *at_start = at_start.saturating_sub(logged_before);
            }
            o.used().unwrap_or(measured)
        }))
    }

    /// Whether a room may grow the owner's files by `bytes` more, from what this node
    /// knows now; starts a new measure when the last is stale. Never waits.
    pub fn may_grow(self: &Arc<Self>, owner: &AccountId, bytes: u64) -> bool {
        let Some((limit, store)) = self.limit_for(owner) else {
            return true;
        };
        let now = Instant::now();
        let (used, measure) = self.owner(owner, now, |o| {
            let stale = o
                .began
                .is_none_or(|b| now.saturating_duration_since(b) >= REMEASURE);
            let start = stale && o.logged_at_start.is_none();
            if start {
                o.began = Some(now);
                o.logged_at_start = Some(o.logged);
            }
            (o.used(), start)
        });
        if measure {
            self.measure_later(owner.clone(), store.clone());
        }
        used.is_none_or(|u| u.saturating_add(bytes) <= limit)
    }

    /// A room logged `bytes` for the owner (a patch accepted).
    pub fn logged(&self, owner: &AccountId, bytes: u64) {
        if self.limit_for(owner).is_some() {
            self.owner(owner, Instant::now(), |o| {
                o.logged = o.logged.saturating_add(bytes)
            });
        }
    }

    fn measure_later(self: &Arc<Self>, owner: AccountId, store: Arc<dyn Store>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let this = self.clone();
        runtime.spawn(async move {
            let answer = store.stored_bytes(&owner).await;
            this.owner(&owner, Instant::now(), |o| {
                let at_start = o.logged_at_start.take().unwrap_or(0);
                match answer {
                    Ok(measured) => {
                        o.measured = Some(measured);
                        o.logged = o.logged.saturating_sub(at_start);
                    }
                    // Tried again at the next question after REMEASURE.
                    Err(e) => {
                        tracing::warn!(owner = %owner, error = %e, "could not measure storage")
                    }
                }
            });
        });
    }

    /// Runs `f` on the owner's entry (made if new), under the lock.
    fn owner<T>(&self, owner: &AccountId, now: Instant, f: impl FnOnce(&mut Owner) -> T) -> T {
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        // Every patch asks: a known owner costs a lookup, not a copy of its id.
        if let Some(known) = owners.get_mut(owner) {
            known.asked = Some(now);
            return f(known);
        }
        if owners.len() >= REMEMBERED {
            owners.retain(|_, o| {
                o.logged_at_start.is_some()
                    || o.asked
                        .is_some_and(|a| now.saturating_duration_since(a) < FORGET)
            });
            if owners.len() >= REMEMBERED {
                // Everyone was asked about lately: the idle ones go (measured again if asked).
                owners.retain(|_, o| o.logged_at_start.is_some());
            }
        }
        let entry = owners.entry(owner.clone()).or_default();
        entry.asked = Some(now);
        f(entry)
    }
}

/// The `what` label of `atrium_storage_refusals_total`.
pub const REFUSED_WHAT: &[&str] = &["create", "version", "restore", "patch", "checkpoint"];

#[cfg(test)]
mod tests;
