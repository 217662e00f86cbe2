//! What the patches from one client address may rewrite, in all files together.
//!
//! Each room has its own allowance of stored bytes its patches may rewrite a second
//! ([`REWRITE_PER_SECOND`]); without one across rooms, a free account's twenty files of
//! large nodes, each edited by a few guests, rewrote 11 GB in 15 s and took 0.4 of a core
//! from everyone else (the re-check of the sixth review). So a rewrite is also taken from
//! its sender's address's allowance (an IPv6 client by its /64), the same size as one
//! room's: an address rewrites in all files together what one file may. It is the
//! sender's, not the file owner's: kept per owner, a guest with one shared file's edit key
//! spent the owner's allowance and had the owner's edits refused in every file they own
//! (the seventh review). The server API's patches (no socket) have none.

use std::net::IpAddr;
use std::time::Instant;

use crate::limits::KeyedLimiter;

/// Bytes of stored nodes a room's patches may rewrite a second, after [`REWRITE_BURST`]: a
/// `set` of one prop rewrites its whole node, which may be a megabyte, so a patch of a
/// kilobyte can cost the node a thousand times its size (the sixth review: 3.65 MB of
/// patches made a node rewrite 48 GB, and the worker held up every room's saving).
pub const REWRITE_PER_SECOND: f64 = 32.0 * 1024.0 * 1024.0;
pub const REWRITE_BURST: f64 = 64.0 * 1024.0 * 1024.0;

/// Addresses remembered at once (the least recently used is forgotten past it).
const ADDRESSES: usize = 100_000;

pub struct AddressRewrites {
    by_address: KeyedLimiter<IpAddr>,
}

impl AddressRewrites {
    /// One room's allowance a second for each address, and a burst of at least the
    /// largest document.
    pub fn new(max_doc_bytes: usize) -> Self {
        Self {
            by_address: KeyedLimiter::bytes(
                REWRITE_PER_SECOND as u64,
                REWRITE_BURST.max(max_doc_bytes as f64) as u64,
                ADDRESSES,
            ),
        }
    }

    /// Takes `bytes` of `address`'s allowance if it has them (no address: the server API).
    pub fn take(&self, address: Option<IpAddr>, bytes: f64, now: Instant) -> bool {
        address.is_none_or(|a| self.by_address.take_amount_at(&a, bytes, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_addresss_patches_share_one_allowance_in_all_files() {
        let rewrites = AddressRewrites::new(0);
        let (here, there): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let now = Instant::now();
        assert!(rewrites.take(Some(here), REWRITE_BURST * 0.75, now));
        assert!(
            !rewrites.take(Some(here), REWRITE_BURST * 0.5, now),
            "the same address in another file draws on what is left"
        );
        assert!(
            rewrites.take(Some(there), REWRITE_BURST * 0.5, now),
            "another address has its own"
        );
        let later = now + std::time::Duration::from_secs(1);
        assert!(
            rewrites.take(Some(here), REWRITE_BURST * 0.5, later),
            "a second's worth later"
        );
        for _ in 0..4 {
            assert!(
                rewrites.take(None, REWRITE_BURST, now),
                "the server API's patches have none"
            );
        }
    }
}
