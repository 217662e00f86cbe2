//! A text message encoded once and written to many sockets.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::{
    header_len, opcode, put_header, text, text_deflated, COMPRESS_THRESHOLD, FIN, MAX_HEADER,
};

/// A text message the room sends to many sockets. The plain frame is built once
/// at creation; the compressed one is built at most once, on first demand, for
/// payloads of at least `threshold` bytes that are `compressible`.
#[derive(Debug)]
pub struct Outgoing {
    plain: Bytes,
    /// Where the payload starts in `plain`.
    header: usize,
    /// Whether a deflate socket may get a compressed frame.
    compress: bool,
    /// The frame for deflate sockets: compressed, or `plain` when deflating did
    /// not make it smaller.
    deflated: OnceLock<Bytes>,
}

impl Outgoing {
    /// A message with the default threshold ([`COMPRESS_THRESHOLD`]).
    pub fn new(payload: Bytes, compressible: bool) -> Arc<Self> {
        Self::with_threshold(payload, compressible, COMPRESS_THRESHOLD)
    }

    /// A message that is compressed only when at least `threshold` bytes long.
    pub fn with_threshold(payload: Bytes, compressible: bool, threshold: usize) -> Arc<Self> {
        Arc::new(Self {
            header: header_len(payload.len()),
            plain: text(&payload),
            compress: compressible && payload.len() >= threshold,
            deflated: OnceLock::new(),
        })
    }

    /// A message never compressed, whose text is written by `write` straight into
    /// its frame: no text of its own first, no copy. `capacity` is a guess of the
    /// text's length (the buffer grows past it if need be).
    pub fn written(capacity: usize, write: impl FnOnce(&mut Vec<u8>)) -> Arc<Self> {
        // Room for the longest header in front; the unused part of it is cut off.
        let mut buf = Vec::with_capacity(MAX_HEADER + capacity);
        buf.resize(MAX_HEADER, 0);
        write(&mut buf);
        let len = buf.len() - MAX_HEADER;
        let header = header_len(len);
        let start = MAX_HEADER - header;
        put_header(&mut buf[start..MAX_HEADER], FIN | opcode::TEXT, len);
        Arc::new(Self {
            plain: Bytes::from(buf).slice(start..),
            header,
            compress: false,
            deflated: OnceLock::new(),
        })
    }

    /// The bytes to write on a socket that did (`true`) or did not agree to deflate.
    pub fn frame(&self, deflate: bool) -> Bytes {
        if !(deflate && self.compress) {
            return self.plain.clone();
        }
        self.deflated
            .get_or_init(|| {
                let compressed = text_deflated(self.payload());
                if compressed.len() < self.plain.len() {
                    compressed
                } else {
                    self.plain.clone()
                }
            })
            .clone()
    }

    /// The frame for this socket if it needs no work (no compression still to
    /// do): what a sender may write at once without holding up its own task.
    pub fn frame_if_ready(&self, deflate: bool) -> Option<Bytes> {
        if !(deflate && self.compress) {
            return Some(self.plain.clone());
        }
        self.deflated.get().cloned()
    }

    /// The uncompressed payload.
    pub fn payload(&self) -> &[u8] {
        &self.plain[self.header..]
    }

    /// The uncompressed payload, sharing the frame's memory.
    pub fn payload_bytes(&self) -> Bytes {
        self.plain.slice(self.header..)
    }

    /// Length of the uncompressed payload.
    pub fn payload_len(&self) -> usize {
        self.plain.len() - self.header
    }
}

#[cfg(test)]
mod tests;
