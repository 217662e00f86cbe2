//! A text message made of a part of its own around a part shared with other messages:
//! a welcome's document, encoded and compressed once for every joiner at one version
//! instead of once for each.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};

use super::{header_len, opcode, put_header, FIN, RSV1};
use crate::ws::deflate;

/// The part many messages share, with what is kept alive for as long as any of its bytes
/// are (what it was charged, given back once the last socket has written it, or dropped it).
pub struct Middle {
    text: Bytes,
    /// Its compressed form (a part, see [`deflate::compress_part`]), made on first demand;
    /// `None` when compressing does not make it smaller.
    deflated: OnceLock<Option<Bytes>>,
    kept: Kept,
}

/// What a [`Middle`]'s bytes keep alive.
pub type Kept = Option<Arc<dyn Any + Send + Sync>>;

/// Bytes that keep something alive with them: every clone a writer holds does.
struct Owned {
    data: Vec<u8>,
    _kept: Kept,
}

impl AsRef<[u8]> for Owned {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

fn owned(data: Vec<u8>, kept: &Kept) -> Bytes {
    Bytes::from_owner(Owned {
        data,
        _kept: kept.clone(),
    })
}

impl Middle {
    pub fn new(text: impl Into<Vec<u8>>, kept: Kept) -> Arc<Self> {
        Arc::new(Self {
            text: owned(text.into(), &kept),
            deflated: OnceLock::new(),
            kept,
        })
    }

    pub fn len(&self) -> usize {
        self.text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Whether it keeps something alive (a charge on the node's allowance for large
    /// messages): such a copy is counted there once, not in each socket's queue.
    pub fn is_charged(&self) -> bool {
        self.kept.is_some()
    }

    /// What the copy keeps alive with it (its charge on the allowance for large messages).
    pub fn kept(&self) -> Option<&(dyn Any + Send + Sync)> {
        self.kept.as_deref()
    }

    fn deflated(&self) -> Option<&Bytes> {
        self.deflated
            .get_or_init(|| {
                let part = deflate::compress_part(&self.text);
                (part.len() < self.text.len()).then(|| owned(part, &self.kept))
            })
            .as_ref()
    }
}

/// One message: `head`, then a [`Middle`] shared with others, then `tail`, written as one
/// frame whose header counts all three. Only `head` and the frame's header are this
/// message's own bytes.
#[derive(Clone)]
pub struct Spliced {
    head: Bytes,
    middle: Arc<Middle>,
    tail: &'static str,
}

impl Spliced {
    pub fn new(head: Bytes, middle: Arc<Middle>, tail: &'static str) -> Self {
        Self { head, middle, tail }
    }

    /// The part it shares.
    pub fn middle(&self) -> &Arc<Middle> {
        &self.middle
    }

    /// Bytes of the payload that are this message's alone.
    pub fn own_len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Bytes of the payload shared with other messages.
    pub fn middle_len(&self) -> usize {
        self.middle.len()
    }

    pub fn payload_len(&self) -> usize {
        self.own_len() + self.middle_len()
    }

    /// The whole payload, copied (for tests and logs).
    pub fn payload(&self) -> Vec<u8> {
        [&self.head[..], &self.middle.text[..], self.tail.as_bytes()].concat()
    }

    /// Whether [`Self::frames`] has nothing large left to compress for this socket.
    pub fn is_ready(&self, deflate: bool) -> bool {
        !deflate || self.middle.deflated.get().is_some()
    }

    /// The frame in three pieces, to be written in order: the header with the head, the
    /// middle (the same bytes for every socket), the tail. Compressed for a socket that
    /// agreed to deflate, unless compressing does not make the middle smaller.
    pub fn frames(&self, deflate: bool) -> [Bytes; 3] {
        if deflate {
            if let Some(middle) = self.middle.deflated() {
                let head = deflate::compress_part(&self.head);
                let tail = deflated_tail(self.tail);
                let len = head.len() + middle.len() + tail.len();
                return [framed_head(RSV1, len, &head), middle.clone(), tail];
            }
        }
        [
            framed_head(0, self.payload_len(), &self.head),
            self.middle.text.clone(),
            Bytes::from_static(self.tail.as_bytes()),
        ]
    }
}

/// `tail` compressed as a message's last part; the welcome's closing brace is compressed
/// once for the process, not by a compressor made for each socket.
fn deflated_tail(tail: &'static str) -> Bytes {
    static BRACE: OnceLock<Bytes> = OnceLock::new();
    let compress = || Bytes::from(deflate::compress(tail.as_bytes()));
    match tail {
        "}" => BRACE.get_or_init(compress).clone(),
        _ => compress(),
    }
}

/// A final text frame's header for a payload of `len` bytes, followed by `head`, its start.
fn framed_head(extra: u8, len: usize, head: &[u8]) -> Bytes {
    let header = header_len(len);
    let mut out = BytesMut::with_capacity(header + head.len());
    out.resize(header, 0);
    put_header(&mut out[..header], FIN | extra | opcode::TEXT, len);
    out.extend_from_slice(head);
    out.freeze()
}

#[cfg(test)]
mod tests;
