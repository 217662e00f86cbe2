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
//! - [`liveness`]: how long the client has been silent while the node listened.
//!
//! Compression uses no context takeover in both directions, so a compressed
//! frame does not depend on what the socket sent before: the same bytes are
//! valid on every socket that agreed to deflate, and no compressor or
//! decompressor state stays allocated between messages.

pub mod deflate;
pub mod frame;
pub mod handshake;
pub mod liveness;
pub mod reader;
#[cfg(test)]
mod test_bytes;

pub use frame::{Kept, Middle, Outgoing, Spliced, COMPRESS_THRESHOLD};
pub use handshake::{accept, Accepted, HandshakeError};
pub use liveness::Liveness;
pub use reader::{Allowance, Incoming, ReadError, Reader, ReaderLimits};
