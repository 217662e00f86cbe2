//! The recent operations: the last patches of a file, for resume and for
//! answering resent op ids with their original version. Bounded in count and bytes.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::outbox::Msg;

use crate::ids::ClientKey;
use crate::protocol;

pub struct RecentOp {
    pub v: u64,
    pub client: ClientKey,
    pub op_id: u64,
    pub t: Option<String>,
    /// The encoded `patch` message everyone else received.
    pub relay: Msg,
}

impl RecentOp {
    fn size(&self) -> usize {
        self.relay.payload_len() + self.t.as_ref().map_or(0, String::len) + 64
    }
}

/// At least the length of an ack without its `t`
/// (`{"type":"ack","id":N,"v":N}` with two 20-digit numbers).
const ACK_BYTES: usize = 80;

pub struct RecentOps {
    entries: VecDeque<RecentOp>,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl RecentOps {
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            bytes: 0,
            max_entries,
            max_bytes,
        }
    }

    /// Adds the next version, dropping the oldest beyond the bounds.
    pub fn push(&mut self, entry: RecentOp) {
        debug_assert!(self.entries.back().is_none_or(|e| e.v + 1 == entry.v));
        self.bytes += entry.size();
        self.entries.push_back(entry);
        while self.entries.len() > self.max_entries
            || (self.bytes > self.max_bytes && self.entries.len() > 1)
        {
            if let Some(old) = self.entries.pop_front() {
                self.bytes -= old.size();
            }
        }
    }

    /// The version a client's op id was given, while it still holds it.
    pub fn version_of(&self, client: ClientKey, op_id: u64) -> Option<u64> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.client == client && e.op_id == op_id)
            .map(|e| e.v)
    }

    /// About how many bytes [`Self::resume`] would give `client` (at least as many: each
    /// patch of others as its relay, each of its own as an ack), or `None` when it could
    /// not resume: in O(patches).
    pub fn resume_len(&self, since: u64, version: u64, client: ClientKey) -> Option<usize> {
        if since == version {
            return Some(0);
        }
        let (first, last) = (self.entries.front()?, self.entries.back()?);
        if since > version || first.v > since + 1 || last.v < version {
            return None;
        }
        let skip = (since + 1 - first.v) as usize;
        let wanted = self
            .entries
            .iter()
            .skip(skip)
            .take_while(|e| e.v <= version);
        let size = |e: &RecentOp| match e.client == client {
            // An ack: its type, ids and `t`.
            true => ACK_BYTES + e.t.as_ref().map_or(0, String::len),
            false => e.size(),
        };
        Some(wanted.map(size).sum())
    }

    /// The messages that bring a client from `since` to `version`, or `None` when
    /// it no longer holds all of them. Its own patches come back as acks.
    pub fn resume(&self, since: u64, version: u64, client: ClientKey) -> Option<Vec<Bytes>> {
        if since > version {
            return None;
        }
        if since == version {
            return Some(Vec::new());
        }
        let first = self.entries.front()?.v;
        if first > since + 1 || self.entries.back()?.v < version {
            return None;
        }
        let skip = (since + 1 - first) as usize;
        Some(
            self.entries
                .iter()
                .skip(skip)
                .take_while(|e| e.v <= version)
                .map(|e| {
                    if e.client == client {
                        Bytes::from(protocol::ack(e.op_id, e.v, e.t.as_deref()))
                    } else {
                        e.relay.payload_bytes()
                    }
                })
                .collect(),
        )
    }

    /// Patches held: the most recent, within `ATRIUM_ROOM_OPS` and `ATRIUM_ROOM_OPS_BYTES`.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(v: u64, client: u8) -> RecentOp {
        RecentOp {
            v,
            client: ClientKey([client; 16]),
            op_id: v * 10,
            t: None,
            relay: crate::outbox::shared(format!("relay {v}")),
        }
    }

    #[test]
    fn resume_covers_only_what_the_ring_holds() {
        let mut recent = RecentOps::new(3, 1 << 20);
        for v in 1..=5 {
            recent.push(entry(v, (v % 2) as u8));
        }
        // Holds 3, 4, 5.
        assert!(recent.resume(1, 5, ClientKey([9; 16])).is_none());
        let r = recent.resume(2, 5, ClientKey([1; 16])).unwrap();
        assert_eq!(r.len(), 3);
        assert!(String::from_utf8_lossy(&r[0]).contains("\"type\":\"ack\""));
        assert_eq!(&r[1][..], b"relay 4");
        assert_eq!(recent.resume(5, 5, ClientKey([1; 16])).unwrap().len(), 0);
        assert!(recent.resume(6, 5, ClientKey([1; 16])).is_none());
        assert_eq!(recent.version_of(ClientKey([0; 16]), 40), Some(4));
        assert_eq!(recent.version_of(ClientKey([0; 16]), 20), None);
    }

    #[test]
    fn resume_len_says_what_resume_gives() {
        let mut recent = RecentOps::new(3, 1 << 20);
        let any = ClientKey([1; 16]);
        assert_eq!(recent.resume_len(0, 0, any), Some(0));
        assert_eq!(recent.resume_len(0, 1, any), None);
        // Every other patch is the client's own: it comes back as an ack.
        for v in 1..=5 {
            recent.push(entry(v, (v % 2) as u8));
        }
        for since in 0..=7 {
            for version in 0..=7 {
                let given = recent.resume(since, version, any);
                let len = recent.resume_len(since, version, any);
                assert_eq!(
                    len.is_some(),
                    given.is_some(),
                    "since {since}, version {version}"
                );
                let given: usize = given.iter().flatten().map(|f| f.len()).sum();
                assert!(
                    len.unwrap_or(0) >= given,
                    "since {since}, version {version}"
                );
            }
        }
    }

    #[test]
    fn bytes_bound_drops_the_oldest() {
        let mut recent = RecentOps::new(1000, 200);
        for v in 1..=10 {
            recent.push(entry(v, 0));
        }
        assert!(recent.bytes() <= 200);
        assert!(recent.resume(9, 10, ClientKey([0; 16])).is_some());
    }
}
