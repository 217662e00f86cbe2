//! What the reader gives: a message or control frame, or why reading stopped.

use atrium_protocol::CloseCode;
use bytes::Bytes;

/// One message or control frame from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    Text(String),
    /// A binary message; its content is discarded (the node answers 1003).
    Binary,
    Ping(Bytes),
    Pong,
    /// A close frame, with its code if it had one.
    Close(Option<u16>),
}

/// Why reading stopped. After any error (and after a close frame), the reader
/// is finished: further calls return `Closed`.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("message over the size limit")]
    TooBig,
    #[error("compressed messages inflate more than allowed")]
    OverInflated,
    #[error("text is not valid UTF-8")]
    InvalidUtf8,
    #[error("protocol error: {0}")]
    Protocol(&'static str),
    #[error("fragmented message not completed in time")]
    FragmentTimeout,
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("connection closed")]
    Closed,
}

impl ReadError {
    /// The close code to send the client, if the connection can still take one.
    /// A fragment timeout is a policy of ours, not a protocol violation: 1008.
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            Self::TooBig | Self::OverInflated => Some(CloseCode::TooBig),
            Self::InvalidUtf8 => Some(CloseCode::InvalidText),
            Self::Protocol(_) => Some(CloseCode::ProtocolError),
            Self::FragmentTimeout => Some(CloseCode::PolicyViolation),
            Self::Io(_) | Self::Closed => None,
        }
    }
}
