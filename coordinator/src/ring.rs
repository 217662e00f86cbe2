//! The consistent hash ring of live nodes: which node should serve a file.
//!
//! The router and every node build it from the same membership and must place every file on
//! the same node, so the placement is pinned down completely here, independent of the Rust
//! version and of the machine:
//!
//! - each member appears as [`VNODES`] virtual nodes (the `consistent_hash_ring` crate's
//!   default of 10 spreads keys very unevenly);
//! - members are hashed by their stable [`NodeId`], never by address, so a node that comes
//!   back on a new address keeps its files;
//! - the hasher is SipHash-1-3 (the `siphasher` crate) with the fixed keys [`SIP_KEYS`]. The
//!   bytes fed to it are ours too: a node id or file id as its UTF-8 bytes alone, and the
//!   ring's own re-hashing of 64-bit positions as 8 little-endian bytes, so std's `Hash`
//!   impls (which may change between Rust versions) never take part.
//!
//! `tests/ring_vectors.rs` checks a table of (members, file → owner) against this module.
//! Changing any of the above moves files between nodes: update the table on purpose.

use std::hash::{BuildHasher, Hash, Hasher};

use consistent_hash_ring::RingBuilder;
use siphasher::sip::SipHasher13;

use crate::NodeId;

/// Virtual nodes per member.
pub const VNODES: usize = 128;
/// The SipHash keys: arbitrary, fixed forever (changing them moves every file).
pub const SIP_KEYS: (u64, u64) = (0x6174_7269_756d_2d72, 0x696e_672d_7631_0000);

/// Places files on members. Cheap to query (a binary search); rebuild it when the
/// membership changes.
#[derive(Clone)]
pub struct Ring {
    inner: consistent_hash_ring::Ring<RingNode, StableHash>,
}

impl Ring {
    /// A ring of the given members (duplicates count once). Callers usually pass the live,
    /// non-draining members.
    pub fn new<'a>(members: impl IntoIterator<Item = &'a NodeId>) -> Self {
        let inner = RingBuilder::new(StableHash)
            .vnodes(VNODES)
            .nodes_iter(members.into_iter().map(|id| RingNode(id.clone())))
            .build();
        Self { inner }
    }

    /// The node that should serve `file`; `None` on an empty ring.
    pub fn owner(&self, file: &str) -> Option<NodeId> {
        self.inner.try_get(Bytes(file)).map(|n| n.0.clone())
    }

    /// Every member, each once, in the order to try them for `file`: the owner first.
    pub fn candidates<'a>(&'a self, file: &'a str) -> impl Iterator<Item = NodeId> + 'a {
        self.inner.replicas(Bytes(file)).map(|n| n.0.clone())
    }

    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
}

/// A member on the ring, hashed as its id's bytes alone.
#[derive(Clone, PartialEq, Eq)]
struct RingNode(NodeId);

impl Hash for RingNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0.as_str().as_bytes());
    }
}

/// A looked-up key, hashed as its bytes alone.
struct Bytes<'a>(&'a str);

impl Hash for Bytes<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0.as_bytes());
    }
}

#[derive(Clone, Copy, Default)]
struct StableHash;

impl BuildHasher for StableHash {
    type Hasher = StableHasher;

    fn build_hasher(&self) -> StableHasher {
        StableHasher(SipHasher13::new_with_keys(SIP_KEYS.0, SIP_KEYS.1))
    }
}

/// SipHash-1-3 that takes integers as little-endian bytes on every platform.
struct StableHasher(SipHasher13);

impl Hasher for StableHasher {
    fn finish(&self) -> u64 {
        self.0.finish()
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    fn write_u64(&mut self, i: u64) {
        self.0.write(&i.to_le_bytes());
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}
