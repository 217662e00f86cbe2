//! From frames to messages: a header checked against the open message, then
//! fragments joined, inflated within the socket's allowance, and checked as text.

use bytes::Bytes;
use tokio::time::Instant;

use super::wire::{parse_close, unmask, Header};
use super::{Incoming, ReadError, Reader, ReaderLimits, INFLATE_CREDIT};
use crate::ws::deflate::{self, InflateError};
use crate::ws::frame::opcode;

/// A data message whose first frame arrived but not its last.
pub(super) struct Partial {
    text: bool,
    compressed: bool,
    /// Payload so far (text only: binary content is not kept).
    data: Vec<u8>,
    /// Payload bytes so far, as sent (compressed or not).
    len: usize,
    pub(super) deadline: Instant,
}

impl Partial {
    /// Payload bytes so far, as sent.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

impl<R> Reader<R> {
    /// Checks a header against the message state, before its payload is read.
    pub(super) fn check(&self, h: &Header) -> Result<(), ReadError> {
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

    /// Handles the complete frame at the start of the buffer.
    pub(super) fn take_frame(
        &mut self,
        h: &Header,
        total: usize,
    ) -> Result<Option<Incoming>, ReadError> {
        let payload = &mut self.buf[h.size..total];
        unmask(payload, h.mask);
        let payload = &*payload;
        self.paces
            .spend(matches!(h.opcode, opcode::PING | opcode::PONG));
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
                let compressed = h.rsv1 || self.partial.as_ref().is_some_and(|p| p.compressed);
                let message = data_frame(&mut self.partial, &self.limits, allowance, h, payload)?;
                if let Some(Incoming::Text(text)) = &message {
                    self.inflated += text.len();
                    if let (true, Some(memory)) = (compressed, &self.allowance) {
                        memory.inflated(text.len());
                    }
                }
                Ok(message)
            }
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
