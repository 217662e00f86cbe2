//! permessage-deflate payloads, both ways, as a hand-made client needs them.

/// A permessage-deflate payload inflated (the `00 00 ff ff` put back).
pub(super) fn inflate(payload: &[u8]) -> Vec<u8> {
    use flate2::{Decompress, FlushDecompress};
    let mut data = payload.to_vec();
    data.extend_from_slice(&[0, 0, 0xff, 0xff]);
    let mut d = Decompress::new(false);
    let out = Vec::with_capacity(data.len() * 4 + 1024);
    all_through(&data, out, |input, out| {
        d.decompress_vec(input, out, FlushDecompress::Sync)
            .expect("inflate");
        d.total_in()
    })
}

/// Feeds all of `data` through a flate2 stream (`step` takes the rest of the
/// input and the output, and says how much input the stream has taken in all),
/// growing `out` until the stream has taken everything and has room to spare.
fn all_through(
    data: &[u8],
    mut out: Vec<u8>,
    mut step: impl FnMut(&[u8], &mut Vec<u8>) -> u64,
) -> Vec<u8> {
    let mut consumed = 0;
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity());
        }
        consumed = step(&data[consumed..], &mut out) as usize;
        if consumed == data.len() && out.len() < out.capacity() {
            return out;
        }
    }
}

/// Raw DEFLATE of `data` in the permessage-deflate form (sync flushed, the
/// final `00 00 ff ff` removed).
pub(super) fn deflate(data: &[u8]) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let mut c = Compress::new(Compression::best(), false);
    let out = Vec::with_capacity(data.len() / 100 + 1024);
    let mut out = all_through(data, out, |input, out| {
        c.compress_vec(input, out, FlushCompress::Sync)
            .expect("deflate");
        c.total_in()
    });
    assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
    out.truncate(out.len() - 4);
    out
}
