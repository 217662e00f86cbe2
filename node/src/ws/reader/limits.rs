//! Limits on what a client may send: message size, fragment time, inflation.

use std::time::Duration;

/// Limits on what a client may send.
#[derive(Debug, Clone, Copy)]
pub struct ReaderLimits {
    /// Largest message, inclusive, before and after decompression.
    pub max_message: usize,
    /// Time from the first frame of a fragmented message (once received whole)
    /// to its last; checked whenever the reader waits for bytes.
    pub fragment_timeout: Duration,
    /// Compressed messages may inflate, in all, to at most this many bytes per byte
    /// received (plus [`INFLATE_CREDIT`]): what the node holds and relays because of
    /// a socket stays in proportion to what the socket sent. 0: no bound.
    pub inflate_ratio: usize,
}

/// Inflated bytes a socket may have beyond its ratio, so that a few small, very
/// compressible messages (a hello, a selection) are never refused.
pub const INFLATE_CREDIT: usize = 64 * 1024;

impl Default for ReaderLimits {
    fn default() -> Self {
        Self {
            max_message: 1 << 20,
            fragment_timeout: Duration::from_secs(10),
            inflate_ratio: 0,
        }
    }
}
