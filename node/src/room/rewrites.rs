//! What the patches of one account's files may rewrite together.
//!
//! Each room has its own allowance of stored bytes its patches may rewrite a second
//! ([`REWRITE_PER_SECOND`]); without one across rooms, a free account's twenty files of
//! large nodes, each edited by a few guests, rewrote 11 GB in 15 s and took 0.4 of a core
//! from everyone else (the re-check of the sixth review).
//! So a rewrite is also taken from its file's owner's allowance, the same size as one
//! room's: an account's files rewrite together what one of them may alone. The app's own
//! account (the server API's files) has none: its files are every app user's.

use std::time::Instant;

use crate::ids::AccountId;
use crate::limits::KeyedLimiter;

/// Bytes of stored nodes a room's patches may rewrite a second, after [`REWRITE_BURST`]: a
/// `set` of one prop rewrites its whole node, which may be a megabyte, so a patch of a
/// kilobyte can cost the node a thousand times its size (the sixth review: 3.65 MB of
/// patches made a node rewrite 48 GB, and the worker held up every room's saving).
pub const REWRITE_PER_SECOND: f64 = 32.0 * 1024.0 * 1024.0;
pub const REWRITE_BURST: f64 = 64.0 * 1024.0 * 1024.0;

/// Accounts remembered at once (the least recently used is forgotten past it).
const ACCOUNTS: usize = 100_000;

pub struct AccountRewrites {
    by_account: KeyedLimiter<AccountId>,
    app: AccountId,
}

impl AccountRewrites {
    /// One room's allowance a second for each account, and a burst of at least the
    /// largest document.
    pub fn new(max_doc_bytes: usize) -> Self {
        Self {
            by_account: KeyedLimiter::bytes(
                REWRITE_PER_SECOND as u64,
                REWRITE_BURST.max(max_doc_bytes as f64) as u64,
                ACCOUNTS,
            ),
            app: crate::apptoken::owner_for(None),
        }
    }

    /// Takes `bytes` of `owner`'s allowance if it has them.
    pub fn take(&self, owner: &AccountId, bytes: f64, now: Instant) -> bool {
        *owner == self.app || self.by_account.take_amount_at(owner, bytes, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accounts_files_share_one_allowance() {
        let rewrites = AccountRewrites::new(0);
        let (owner, other) = (AccountId::generate(), AccountId::generate());
        let now = Instant::now();
        assert!(rewrites.take(&owner, REWRITE_BURST * 0.75, now));
        assert!(
            !rewrites.take(&owner, REWRITE_BURST * 0.5, now),
            "another file of the same owner draws on what is left"
        );
        assert!(
            rewrites.take(&other, REWRITE_BURST * 0.5, now),
            "another owner's own"
        );
        let later = now + std::time::Duration::from_secs(1);
        assert!(
            rewrites.take(&owner, REWRITE_BURST * 0.5, later),
            "a second's worth later"
        );
        let app = crate::apptoken::owner_for(None);
        for _ in 0..4 {
            assert!(
                rewrites.take(&app, REWRITE_BURST, now),
                "the app's files have none"
            );
        }
    }
}
