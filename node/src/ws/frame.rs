//! Server frames (RFC 6455 §5.2), built whole (header and payload) in one buffer.
//! Server frames are never masked and never fragmented; a spliced one is written in
//! pieces, but as one frame.

mod outgoing;
mod spliced;

pub use outgoing::Outgoing;
pub use spliced::{Kept, Middle, Spliced};

use bytes::{BufMut, Bytes, BytesMut};

use super::deflate;

/// Payloads at least this long are deflated for sockets that agreed to it.
pub const COMPRESS_THRESHOLD: usize = 1024;

/// Frame opcodes (RFC 6455 §5.2).
pub(crate) mod opcode {
    pub const CONTINUATION: u8 = 0x0;
    pub const TEXT: u8 = 0x1;
    pub const BINARY: u8 = 0x2;
    pub const CLOSE: u8 = 0x8;
    pub const PING: u8 = 0x9;
    pub const PONG: u8 = 0xA;
}

const FIN: u8 = 0x80;
const RSV1: u8 = 0x40;
/// Largest payload of a control frame.
pub const MAX_CONTROL_PAYLOAD: usize = 125;
/// Largest close reason: a control payload less the two bytes of the code.
const MAX_CLOSE_REASON: usize = MAX_CONTROL_PAYLOAD - 2;

/// Length of the header for a payload of `len` bytes (unmasked).
/// The longest frame header the node writes (no mask): 2 bytes and a 64-bit length.
const MAX_HEADER: usize = 10;

fn header_len(len: usize) -> usize {
    match len {
        0..=125 => 2,
        126..=0xffff => 4,
        _ => 10,
    }
}

/// Writes one final, unmasked frame header for a payload of `len` bytes.
/// Writes a frame's header for a payload of `len` bytes into `out`, which holds
/// exactly [`header_len`]`(len)` bytes.
fn put_header(mut out: &mut [u8], first: u8, len: usize) {
    out.put_u8(first);
    match len {
        0..=125 => out.put_u8(len as u8),
        126..=0xffff => {
            out.put_u8(126);
            out.put_u16(len as u16);
        }
        _ => {
            out.put_u8(127);
            out.put_u64(len as u64);
        }
    }
}

/// One complete frame with FIN set, `first_extra` or-ed into the first byte.
fn build(opcode: u8, first_extra: u8, parts: &[&[u8]]) -> Bytes {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let header = header_len(len);
    let mut out = BytesMut::with_capacity(header + len);
    out.resize(header, 0);
    put_header(&mut out[..header], FIN | first_extra | opcode, len);
    for part in parts {
        out.put_slice(part);
    }
    out.freeze()
}

/// A text frame: FIN, opcode 1, not compressed.
pub fn text(payload: &[u8]) -> Bytes {
    build(opcode::TEXT, 0, &[payload])
}

/// A compressed text frame: FIN, RSV1, opcode 1, with `payload` deflated on its
/// own (no context), so the frame is valid on any socket that agreed to deflate.
pub fn text_deflated(payload: &[u8]) -> Bytes {
    build(opcode::TEXT, RSV1, &[&deflate::compress(payload)])
}

/// A close frame with `code`, and `reason` cut on a char boundary to fit.
pub fn close(code: u16, reason: &str) -> Bytes {
    let mut end = reason.len().min(MAX_CLOSE_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    build(
        opcode::CLOSE,
        0,
        &[&code.to_be_bytes(), &reason.as_bytes()[..end]],
    )
}

/// A ping frame; the payload is cut to 125 bytes.
pub fn ping(payload: &[u8]) -> Bytes {
    build(opcode::PING, 0, &[control_payload(payload)])
}

/// A pong frame; the payload is cut to 125 bytes.
pub fn pong(payload: &[u8]) -> Bytes {
    build(opcode::PONG, 0, &[control_payload(payload)])
}

fn control_payload(payload: &[u8]) -> &[u8] {
    &payload[..payload.len().min(MAX_CONTROL_PAYLOAD)]
}

#[cfg(test)]
mod tests;
