//! The wire contract's fixed vocabulary (`docs/protocol.md`), shared by the node, the
//! router, the load tool and the tests: close codes with their meanings, reject codes, and
//! the message types each side sends. Metrics label by these words, so a fresh node can
//! export every series at zero.

mod close;

pub use close::CloseCode;

/// Codes of a `reject` message.
pub const REJECT_CODES: &[&str] = &["invalid", "too-large", "viewer", "editors-full"];

/// Message types a client sends.
pub const CLIENT_MESSAGES: &[&str] = &["hello", "patch", "presence"];

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
    "page",
    "notice",
    "presence-rate",
];
