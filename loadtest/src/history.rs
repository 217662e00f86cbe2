//! The history check of a failover run: beyond counting lost patches, every client's log of
//! the versions it was given (its own acks and everyone else's patches, live or in a resume)
//! must fit one history per file.
//!
//! - A version names one patch: two clients (or one client twice) given the same version of a
//!   file with different patches is a violation, the mark of two writers or a reordered log.
//! - Each client is given a file's versions in increasing order: a version after a later one
//!   is a violation (a prefix of one order, with jumps only where a welcome sent the document).
//! - Every acked patch is in the final document: counted as `acked_lost` by `converge`.
//!
//! A patch is known by a digest of its ops as JSON with sorted keys: the load tool marks every
//! patch with a prop unique to its client and op id, so two different patches never share one.
//! The first violation is reported with its evidence.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use serde::Serialize;
use serde_json::Value;

/// Versions one client keeps at most (16 bytes each): a run longer than this checks the
/// first ones and says it was cut.
pub const MAX_SEEN: usize = 200_000;

/// What one client was given, in the order it was given: (version, patch digest).
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub entries: Vec<(u64, u64)>,
    pub truncated: bool,
}

impl Seen {
    pub fn note(&mut self, v: u64, ops: &Value) {
        if self.entries.len() >= MAX_SEEN {
            self.truncated = true;
            return;
        }
        self.entries.push((v, digest(ops)));
    }
}

/// A patch's identity: its ops, serialized with sorted keys (serde_json's maps are sorted),
/// hashed.
pub fn digest(ops: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ops.to_string().hash(&mut h);
    h.finish()
}

/// The check's outcome, in the failover report.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HistoryCheck {
    /// Versions given to clients and checked (one per client per version).
    pub versions_checked: u64,
    /// Distinct (file, version) pairs seen by some client.
    pub versions_distinct: u64,
    pub clients: u64,
    pub violations: u64,
    /// The first violation, with its evidence.
    pub first_violation: Option<String>,
    /// Clients whose log reached `MAX_SEEN` (checked as far as it went).
    pub clients_truncated: u64,
}

/// One client's log, for the check.
pub struct ClientLog<'a> {
    pub client: usize,
    pub file: usize,
    pub seen: &'a Seen,
}

/// Checks every client's log against the others'.
pub fn check<'a>(logs: impl IntoIterator<Item = ClientLog<'a>>) -> HistoryCheck {
    let mut out = HistoryCheck::default();
    // (file, version) -> (digest, first client given it).
    let mut versions: HashMap<(usize, u64), (u64, usize)> = HashMap::new();
    let violation = |out: &mut HistoryCheck, what: String| {
        out.violations += 1;
        out.first_violation.get_or_insert(what);
    };
    for log in logs {
        out.clients += 1;
        out.clients_truncated += u64::from(log.seen.truncated);
        let mut last: Option<u64> = None;
        for &(v, d) in &log.seen.entries {
            out.versions_checked += 1;
            if let Some(prev) = last.filter(|prev| v < *prev) {
                violation(
                    &mut out,
                    format!(
                        "client {} of file {} was given version {v} after version {prev}",
                        log.client, log.file
                    ),
                );
            }
            last = Some(last.map_or(v, |l| l.max(v)));
            match versions.get(&(log.file, v)) {
                None => {
                    versions.insert((log.file, v), (d, log.client));
                }
                Some(&(first, by)) if first != d => violation(
                    &mut out,
                    format!(
                        "file {} version {v} is patch {first:016x} for client {by} and patch \
                         {d:016x} for client {}",
                        log.file, log.client
                    ),
                ),
                Some(_) => {}
            }
        }
    }
    out.versions_distinct = versions.len() as u64;
    out
}

#[cfg(test)]
mod tests;
