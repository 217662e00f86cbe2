//! A small server-side WebSocket (RFC 6455) with permessage-deflate (RFC 7692).
//!
//! Built for fan-out: a room encodes a message once as an [`Outgoing`], whose
//! complete wire frames (plain, and deflated when worth it) are shared as
//! [`bytes::Bytes`] by every socket that writes them.
//!
//! - [`handshake`]: checks the upgrade request and builds the 101 answer.
//! - [`frame`]: encodes server frames (never masked) and [`Outgoing`].
//! - [`reader`]: decodes client frames from an `AsyncRead`, cancel-safe.
//! - [`deflate`]: one-shot raw DEFLATE without context takeover.
//!
//! Compression uses no context takeover in both directions, so a compressed
//! frame does not depend on what the socket sent before: the same bytes are
//! valid on every socket that agreed to deflate, and no compressor or
//! decompressor state stays allocated between messages.

pub mod deflate;
pub mod frame;
pub mod handshake;
pub mod reader;

pub use frame::{Outgoing, COMPRESS_THRESHOLD};
pub use handshake::{accept, Accepted, HandshakeError};
pub use reader::{Incoming, ReadError, Reader, ReaderLimits};

/// Close codes (RFC 6455 §7.4.1) the node sends.
pub mod close_code {
    /// Normal closure.
    pub const NORMAL: u16 = 1000;
    /// The endpoint is going away (shutdown).
    pub const GOING_AWAY: u16 = 1001;
    /// Protocol error.
    pub const PROTOCOL: u16 = 1002;
    /// A data type the endpoint does not accept (binary here).
    pub const UNSUPPORTED: u16 = 1003;
    /// Text that is not valid UTF-8.
    pub const INVALID_DATA: u16 = 1007;
    /// A message that breaks the node's policy (e.g. too slow fragments).
    pub const POLICY: u16 = 1008;
    /// A message over the size limit.
    pub const TOO_BIG: u16 = 1009;
    /// An unexpected condition on the server.
    pub const INTERNAL: u16 = 1011;
}
