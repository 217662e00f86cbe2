//! The client frame format: header parsing, unmasking, close payloads.

use super::{Incoming, ReadError};
use crate::ws::frame::{opcode, MAX_CONTROL_PAYLOAD};

/// A parsed frame header.
#[derive(Debug)]
pub(super) struct Header {
    pub fin: bool,
    pub rsv1: bool,
    pub opcode: u8,
    pub mask: [u8; 4],
    /// Header length in bytes, mask included.
    pub size: usize,
    /// Payload length in bytes.
    pub len: usize,
}

/// Parses the header at the start of `buf`: `None` until all of it is there.
/// Checks what one header can show; a non-minimal length encoding is accepted.
pub(super) fn parse_header(buf: &[u8]) -> Result<Option<Header>, ReadError> {
    let [b0, b1, ..] = *buf else { return Ok(None) };
    let (fin, rsv1, op) = (b0 & 0x80 != 0, b0 & 0x40 != 0, b0 & 0x0f);
    if b0 & 0x30 != 0 {
        return Err(ReadError::Protocol("reserved bits RSV2/RSV3 set"));
    }
    let control = match op {
        opcode::CONTINUATION | opcode::TEXT | opcode::BINARY => false,
        opcode::CLOSE | opcode::PING | opcode::PONG => true,
        _ => return Err(ReadError::Protocol("reserved opcode")),
    };
    if b1 & 0x80 == 0 {
        return Err(ReadError::Protocol("client frame not masked"));
    }
    let len7 = b1 & 0x7f;
    if control && !fin {
        return Err(ReadError::Protocol("fragmented control frame"));
    }
    if control && usize::from(len7) > MAX_CONTROL_PAYLOAD {
        return Err(ReadError::Protocol("control frame over 125 bytes"));
    }
    if control && rsv1 {
        return Err(ReadError::Protocol("RSV1 on a control frame"));
    }
    let extra = match len7 {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let size = 2 + extra + 4;
    if buf.len() < size {
        return Ok(None);
    }
    let len = match len7 {
        126 => u64::from(u16::from_be_bytes([buf[2], buf[3]])),
        127 => u64::from_be_bytes(buf[2..10].try_into().expect("8 bytes")),
        n => u64::from(n),
    };
    if len >> 63 != 0 {
        return Err(ReadError::Protocol("payload length with its top bit set"));
    }
    Ok(Some(Header {
        fin,
        rsv1,
        opcode: op,
        mask: buf[size - 4..size].try_into().expect("4 bytes"),
        size,
        // Too long for this platform means too big for any limit.
        len: usize::try_from(len).unwrap_or(usize::MAX - size),
    }))
}

/// A close frame's payload: nothing, or a valid code and a UTF-8 reason.
pub(super) fn parse_close(payload: &[u8]) -> Result<Incoming, ReadError> {
    let [hi, lo, reason @ ..] = payload else {
        return match payload.len() {
            0 => Ok(Incoming::Close(None)),
            _ => Err(ReadError::Protocol("close payload of one byte")),
        };
    };
    let code = u16::from_be_bytes([*hi, *lo]);
    // Codes a peer may send (RFC 6455 §7.4, IANA registry); 1005, 1006 and 1015 never.
    if !matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999) {
        return Err(ReadError::Protocol("invalid close code"));
    }
    std::str::from_utf8(reason).map_err(|_| ReadError::InvalidUtf8)?;
    Ok(Incoming::Close(Some(code)))
}

/// XORs `data` with the 4-byte mask (RFC 6455 §5.3), a word at a time.
pub(super) fn unmask(data: &mut [u8], mask: [u8; 4]) {
    let word = u32::from_ne_bytes(mask);
    let mut chunks = data.chunks_exact_mut(4);
    for chunk in &mut chunks {
        let value = u32::from_ne_bytes(chunk.try_into().expect("4 bytes")) ^ word;
        chunk.copy_from_slice(&value.to_ne_bytes());
    }
    for (byte, key) in chunks.into_remainder().iter_mut().zip(mask) {
        *byte ^= key;
    }
}
