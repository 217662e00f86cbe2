//! Decoding client frames (RFC 6455 §5) into messages.
//!
//! All state lives in [`Reader`]: the only await is a read into its buffer,
//! which is cancel-safe, so `next()` may be dropped at any await (inside
//! `tokio::select!`) and called again without losing or corrupting data.

use atrium_protocol::CloseCode;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::{timeout_at, Instant};

use super::deflate::{self, InflateError};
use super::frame::opcode;

mod wire;
use wire::{parse_close, parse_header, unmask, Header};

/// Read buffer capacity of an idle socket; grown for big frames, then shrunk back.
const BUF_START: usize = 4 * 1024;

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

/// A data message whose first frame arrived but not its last.
struct Partial {
    text: bool,
    compressed: bool,
    /// Payload so far (text only: binary content is not kept).
    data: Vec<u8>,
    /// Payload bytes so far, as sent (compressed or not).
    len: usize,
    deadline: Instant,
}

/// Reads client frames from `R` and reassembles messages.
pub struct Reader<R> {
    io: R,
    buf: Vec<u8>,
    limits: ReaderLimits,
    deflate: bool,
    partial: Option<Partial>,
    finished: bool,
    /// Payload bytes of data frames received, as sent.
    received: usize,
    /// Bytes of text those frames became.
    inflated: usize,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// A reader; `deflate` says whether permessage-deflate was agreed.
    pub fn new(io: R, limits: ReaderLimits, deflate: bool) -> Self {
        Self {
            io,
            buf: Vec::with_capacity(BUF_START),
            limits,
            deflate,
            partial: None,
            finished: false,
            received: 0,
            inflated: 0,
        }
    }

    /// Changes the largest message accepted from now on (small before the hello).
    pub fn set_max_message(&mut self, max: usize) {
        self.limits.max_message = max;
    }

    /// Bytes of message payload received so far, as sent on the wire.
    pub fn received(&self) -> usize {
        self.received
    }

    /// The next message or control frame. Cancel-safe.
    pub async fn next(&mut self) -> Result<Incoming, ReadError> {
        if self.finished {
            return Err(ReadError::Closed);
        }
        let result = self.read_message().await;
        if matches!(result, Err(_) | Ok(Incoming::Close(_))) {
            self.finished = true;
            self.buf = Vec::new();
            self.partial = None;
        }
        result
    }

    async fn read_message(&mut self) -> Result<Incoming, ReadError> {
        loop {
            let Some(header) = parse_header(&self.buf)? else {
                self.fill(0).await?;
                continue;
            };
            self.check(&header)?;
            let total = header.size + header.len;
            if self.buf.len() < total {
                self.fill(total).await?;
                continue;
            }
            let message = self.take_frame(&header, total)?;
            self.consume(total);
            if let Some(message) = message {
                return Ok(message);
            }
        }
    }

    /// Checks a header against the message state, before its payload is read.
    fn check(&self, h: &Header) -> Result<(), ReadError> {
        let max = self.limits.max_message;
        match (h.opcode, &self.partial) {
            (opcode::CONTINUATION, None) => {
                Err(ReadError::Protocol("continuation without a message"))
            }
            (opcode::CONTINUATION, Some(_)) if h.rsv1 => {
                Err(ReadError::Protocol("RSV1 on a continuation frame"))
            }
            (opcode::CONTINUATION, Some(p)) if h.len > max - p.len => Err(ReadError::TooBig),
            (opcode::TEXT | opcode::BINARY, Some(_)) => {
                Err(ReadError::Protocol("new message before the last one ended"))
            }
            (opcode::TEXT | opcode::BINARY, None) if h.rsv1 && !self.deflate => {
                Err(ReadError::Protocol("RSV1 without permessage-deflate"))
            }
            (opcode::TEXT | opcode::BINARY, None) if h.len > max => Err(ReadError::TooBig),
            _ => Ok(()),
        }
    }

    /// Reads more bytes, enough room for a frame of `total` bytes if known.
    /// Cancel-safe: the bytes land in `self.buf` only when the read completes.
    async fn fill(&mut self, total: usize) -> Result<(), ReadError> {
        let want = total.max(self.buf.len() + 1);
        if self.buf.capacity() < want {
            // Grow with the bytes that arrive, not with what a header claims.
            let doubled = self.buf.capacity().saturating_mul(2).max(BUF_START);
            self.buf.reserve_exact(want.min(doubled) - self.buf.len());
        }
        let read = self.io.read_buf(&mut self.buf);
        let n = match self.partial.as_ref().map(|p| p.deadline) {
            Some(deadline) if Instant::now() >= deadline => return Err(ReadError::FragmentTimeout),
            Some(deadline) => timeout_at(deadline, read)
                .await
                .map_err(|_| ReadError::FragmentTimeout)??,
            None => read.await?,
        };
        if n == 0 {
            return Err(ReadError::Closed);
        }
        Ok(())
    }

    /// Handles the complete frame at the start of the buffer.
    fn take_frame(&mut self, h: &Header, total: usize) -> Result<Option<Incoming>, ReadError> {
        let payload = &mut self.buf[h.size..total];
        unmask(payload, h.mask);
        let payload = &*payload;
        match h.opcode {
            opcode::PING => Ok(Some(Incoming::Ping(Bytes::copy_from_slice(payload)))),
            opcode::PONG => Ok(Some(Incoming::Pong)),
            opcode::CLOSE => parse_close(payload).map(Some),
            _ => {
                self.received += payload.len();
                let allowance = match self.limits.inflate_ratio {
                    0 => usize::MAX,
                    ratio => (self.received.saturating_mul(ratio) + INFLATE_CREDIT)
                        .saturating_sub(self.inflated),
                };
                let message = data_frame(&mut self.partial, &self.limits, allowance, h, payload)?;
                if let Some(Incoming::Text(text)) = &message {
                    self.inflated += text.len();
                }
                Ok(message)
            }
        }
    }

    /// Drops the first `total` bytes; shrinks the buffer back after a big frame.
    fn consume(&mut self, total: usize) {
        self.buf.drain(..total);
        if self.buf.capacity() > BUF_START && self.buf.len() <= BUF_START {
            self.buf.shrink_to(BUF_START);
        }
    }
}

/// Adds a data frame to its message; returns the message once complete.
fn data_frame(
    partial: &mut Option<Partial>,
    limits: &ReaderLimits,
    allowance: usize,
    h: &Header,
    payload: &[u8],
) -> Result<Option<Incoming>, ReadError> {
    if h.opcode != opcode::CONTINUATION {
        let text = h.opcode == opcode::TEXT;
        if h.fin {
            let data = if text { payload.to_vec() } else { Vec::new() };
            return finish(text, h.rsv1, data, limits.max_message, allowance).map(Some);
        }
        *partial = Some(Partial {
            text,
            compressed: h.rsv1,
            data: Vec::new(),
            len: 0,
            deadline: Instant::now() + limits.fragment_timeout,
        });
    }
    let p = partial.as_mut().expect("checked: a message is open");
    p.len += payload.len();
    if p.text {
        p.data.extend_from_slice(payload);
    }
    if !h.fin {
        return Ok(None);
    }
    let p = partial.take().expect("checked: a message is open");
    finish(p.text, p.compressed, p.data, limits.max_message, allowance).map(Some)
}

/// A complete message: inflated if compressed, text checked as UTF-8.
fn finish(
    text: bool,
    compressed: bool,
    mut data: Vec<u8>,
    max: usize,
    allowance: usize,
) -> Result<Incoming, ReadError> {
    if !text {
        return Ok(Incoming::Binary);
    }
    if compressed {
        data.extend_from_slice(&deflate::TAIL);
        // Inflating stops at whichever bound comes first; which one says the close.
        let over_ratio = allowance < max;
        data = deflate::inflate(&data, max.min(allowance)).map_err(|e| match e {
            InflateError::TooBig if over_ratio => ReadError::OverInflated,
            InflateError::TooBig => ReadError::TooBig,
            InflateError::Corrupt => ReadError::Protocol("invalid compressed data"),
        })?;
    }
    String::from_utf8(data)
        .map(Incoming::Text)
        .map_err(|_| ReadError::InvalidUtf8)
}

#[cfg(test)]
mod tests;
