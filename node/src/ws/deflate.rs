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
    debug_assert!(
        out.ends_with(&TAIL),
        "a sync flush ends with an empty stored block"
    );
    if out.ends_with(&TAIL) {
        out.truncate(out.len() - TAIL.len());
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
mod tests {
    use super::*;
    use std::io::Read;

    fn sample(len: usize) -> Vec<u8> {
        let words = [
            "cursor ", "moved ", "to ", "line ", "42, ", "column ", "7; ",
        ];
        let mut out = Vec::with_capacity(len);
        let mut i = 0;
        while out.len() < len {
            out.extend_from_slice(words[i % words.len()].as_bytes());
            i += i % 5 + 1;
        }
        out.truncate(len);
        out
    }

    /// Inflates with flate2's reader, independently of `inflate`.
    fn reference_inflate(compressed: &[u8]) -> Vec<u8> {
        let mut input = compressed.to_vec();
        input.extend_from_slice(&TAIL);
        let mut out = Vec::new();
        let mut reader = flate2::read::DeflateDecoder::new(&input[..]);
        // A sync-flushed stream has no final block: read until the data runs out.
        let mut chunk = [0u8; 4096];
        loop {
            match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => panic!("inflate failed: {e}"),
            }
        }
        out
    }

    #[test]
    fn compress_round_trips_through_flate2() {
        for len in [0, 1, 100, 1024, 70_000, 300_000] {
            let payload = sample(len);
            let compressed = compress(&payload);
            assert!(
                !compressed.ends_with(&TAIL) || len == 0,
                "tail kept for {len}"
            );
            assert_eq!(reference_inflate(&compressed), payload, "len {len}");
            if len >= 1024 {
                assert!(compressed.len() < payload.len() / 2, "text compresses");
            }
        }
    }

    #[test]
    fn incompressible_input_round_trips() {
        let mut x: u32 = 12345;
        let payload: Vec<u8> = (0..50_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                (x >> 16) as u8
            })
            .collect();
        let compressed = compress(&payload);
        assert_eq!(reference_inflate(&compressed), payload);
    }

    #[test]
    fn inflate_restores_payload() {
        let payload = sample(200_000);
        let mut data = compress(&payload);
        data.extend_from_slice(&TAIL);
        assert_eq!(inflate(&data, 200_000).unwrap(), payload);
        assert_eq!(inflate(&data, 199_999), Err(InflateError::TooBig));
    }

    #[test]
    fn inflate_of_empty_message() {
        assert_eq!(inflate(&TAIL, 10).unwrap(), b"");
        let mut data = compress(b"");
        data.extend_from_slice(&TAIL);
        assert_eq!(inflate(&data, 0).unwrap(), b"");
    }

    #[test]
    fn inflate_stops_a_bomb_at_the_limit() {
        let payload = vec![b'a'; 10 << 20];
        let mut data = compress(&payload);
        assert!(data.len() < 20_000, "bomb is small: {}", data.len());
        data.extend_from_slice(&TAIL);
        assert_eq!(inflate(&data, 1 << 20), Err(InflateError::TooBig));
    }

    #[test]
    fn inflate_rejects_garbage() {
        // 0xff starts a block of the reserved type 3.
        let data = [0xff, 0xff, 0xff, 0x00, 0x00, 0xff, 0xff];
        assert_eq!(inflate(&data, 1000), Err(InflateError::Corrupt));
    }
}
