use bytes::BytesMut;

use super::*;

/// hyper's leftover bytes as hyper hands them over: a view into its read buffer.
fn leftover(request: usize, extra: usize) -> Bytes {
    let mut buf = BytesMut::with_capacity(8192);
    buf.extend_from_slice(&vec![b'x'; request + extra]);
    drop(buf.split_to(request).freeze());
    buf.freeze()
}

#[test]
fn no_early_bytes_keep_nothing() {
    assert!(early_bytes(leftover(300, 0)).is_none());
}

#[test]
fn early_bytes_do_not_keep_hyper_s_read_buffer() {
    let early = early_bytes(leftover(300, 20)).expect("bytes past the handshake");
    assert_eq!(early.len(), 20);
    // The only owner of its allocation, which is no larger than the bytes.
    let owned = early
        .try_into_mut()
        .expect("not shared with hyper's buffer");
    assert!(owned.capacity() < 64, "{}", owned.capacity());
}
