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
    let payload = crate::ws::test_bytes::noise(12345, 50_000);
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
