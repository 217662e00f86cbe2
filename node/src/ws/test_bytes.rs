//! Bytes for the WebSocket tests.

/// `len` bytes that deflate cannot shrink: a linear congruential sequence from
/// `seed`, the same every run.
pub(crate) fn noise(seed: u32, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect()
}
