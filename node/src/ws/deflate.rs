//! permessage-deflate payloads (RFC 7692 §7.2) without context takeover.
//!
//! Each message is compressed or inflated by a fresh (de)compressor that is
//! dropped when the message is done: nothing stays allocated between messages,
//! and a compressed payload is valid on any socket that agreed to deflate.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The bytes a sync flush ends with; removed by the sender, restored by the
/// receiver (RFC 7692 §7.2.1 and §7.2.2).
pub const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// First output allocation when inflating, before doubling.
const INFLATE_START: usize = 4 * 1024;

/// Why a compressed message could not be inflated.
#[derive(Debug, PartialEq, Eq)]
pub enum InflateError {
    /// The output would exceed the limit.
    TooBig,
    /// The input is not valid raw DEFLATE data.
    Corrupt,
}

/// Compresses `payload` as one message: raw DEFLATE (15-bit window), sync
/// flushed, with the final empty block's `00 00 ff ff` removed.
pub fn compress(payload: &[u8]) -> Vec<u8> {
    let mut out = compress_part(payload);
    debug_assert!(
        out.ends_with(&TAIL),
        "a sync flush ends with an empty stored block"
    );
    if out.ends_with(&TAIL) {
        out.truncate(out.len() - TAIL.len());
    }
    out
}

/// Compresses `payload` as a part of a message, by a compressor of its own: sync flushed,
/// its `00 00 ff ff` kept, so it ends on a byte boundary and no block is final. Parts so
/// made, laid end to end with the last one's `00 00 ff ff` removed, are one valid message:
/// each part's back-references reach only into itself, which a receiver's window holds.
pub fn compress_part(payload: &[u8]) -> Vec<u8> {
    let mut deflater = Compress::new(Compression::default(), false);
    // Room for incompressible input plus block overhead, so one pass usually does.
    let mut out = Vec::with_capacity(payload.len() + payload.len() / 64 + 64);
    loop {
        let consumed = usize::try_from(deflater.total_in()).unwrap_or(usize::MAX);
        let input = payload.get(consumed..).unwrap_or_default();
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(64));
        }
        deflater
            .compress_vec(input, &mut out, FlushCompress::Sync)
            .expect("deflate of an in-memory buffer cannot fail");
        let all_in = deflater.total_in() as usize == payload.len();
        // The flush is complete once everything went in and the output had room left.
        if all_in && out.len() < out.capacity() {
            break;
        }
    }
    out
}

/// Inflates one message's payload: `data` must already end with [`TAIL`].
/// Never produces more than `limit` bytes: larger output is `TooBig`.
pub fn inflate(data: &[u8], limit: usize) -> Result<Vec<u8>, InflateError> {
    let mut inflater = Decompress::new(false);
    let mut out: Vec<u8> = Vec::new();
    loop {
        if out.len() == out.capacity() {
            // Allowing one byte past the limit is how an oversize output is seen.
            let room = (limit + 1).saturating_sub(out.len());
            if room == 0 {
                return Err(InflateError::TooBig);
            }
            out.reserve_exact(out.capacity().max(INFLATE_START).min(room));
        }
        let before_in = inflater.total_in();
        let before_out = out.len();
        let consumed = usize::try_from(before_in).unwrap_or(usize::MAX);
        let input = data.get(consumed..).unwrap_or_default();
        let status = inflater
            .decompress_vec(input, &mut out, FlushDecompress::Sync)
            .map_err(|_| InflateError::Corrupt)?;
        if out.len() > limit {
            return Err(InflateError::TooBig);
        }
        let all_in = inflater.total_in() as usize == data.len();
        let room_left = out.len() < out.capacity();
        match status {
            // A final block (BFINAL) ends the stream; ignore anything after it.
            Status::StreamEnd => return Ok(out),
            _ if all_in && room_left => return Ok(out),
            _ => {}
        }
        let progressed = inflater.total_in() != before_in || out.len() != before_out;
        if !progressed && room_left {
            // Input left but the inflater takes none of it and has nothing to give.
            return Err(InflateError::Corrupt);
        }
    }
}

#[cfg(test)]
mod tests;
