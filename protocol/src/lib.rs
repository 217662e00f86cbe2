//! The wire contract's fixed vocabulary (`docs/protocol.md`), shared by the node, the
//! router, the load tool and the tests: close codes with their meanings, reject codes, and
//! the message types each side sends. Metrics label by these words, so a fresh node can
//! export every series at zero. Also how a client address is counted by the limits, and
//! how much memory the machine (or container) gives a process, which both size their
//! defaults by.

mod address;
mod close;
pub mod host;

pub use address::address_key;
pub use close::CloseCode;

/// A close reason carrying the node's hint of when to come back: `why`, then
/// `; retry-ms=N` (the contract's 1013 at hello).
pub fn with_retry_hint(why: &str, ms: u64) -> String {
    format!("{why}; retry-ms={ms}")
}

/// The `retry-ms=N` hint at the end of a close reason, if it has one.
pub fn retry_hint_ms(reason: &str) -> Option<u64> {
    reason.rsplit_once("retry-ms=")?.1.trim().parse().ok()
}

/// Codes of a `reject` message.
pub const REJECT_CODES: &[&str] = &[
    "invalid",
    "too-large",
    "viewer",
    "editors-full",
    "bad-token",
];

/// Message types a client sends.
pub const CLIENT_MESSAGES: &[&str] = &["hello", "patch", "presence", "refresh", "event"];

/// Message types a node sends.
pub const SERVER_MESSAGES: &[&str] = &[
    "welcome",
    "ack",
    "patch",
    "reject",
    "presences",
    "join",
    "leave",
    "role",
    "notice",
    "presence-rate",
    "version",
    "restored",
    "refreshed",
    "event",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_hint_reads_back() {
        let reason = with_retry_hint("busy", 1840);
        assert_eq!(reason, "busy; retry-ms=1840");
        assert_eq!(retry_hint_ms(&reason), Some(1840));
        assert_eq!(retry_hint_ms("the store is unavailable"), None);
        assert_eq!(retry_hint_ms("retry-ms=soon"), None);
    }
}
