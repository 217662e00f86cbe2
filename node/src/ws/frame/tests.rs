use super::*;

#[test]
fn header_forms_by_payload_length() {
    let cases: [(usize, &[u8]); 5] = [
        (0, &[0x81, 0]),
        (125, &[0x81, 125]),
        (126, &[0x81, 126, 0, 126]),
        (65535, &[0x81, 126, 0xff, 0xff]),
        (65536, &[0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]),
    ];
    for (len, header) in cases {
        let payload = vec![b'x'; len];
        let frame = text(&payload);
        assert_eq!(&frame[..header.len()], header, "len {len}");
        assert_eq!(frame.len(), header.len() + len);
        assert_eq!(&frame[header.len()..], &payload[..]);
    }
}

#[test]
fn control_frames() {
    assert_eq!(&ping(b"hi")[..], b"\x89\x02hi");
    assert_eq!(&pong(b"")[..], b"\x8a\x00");
    assert_eq!(pong(&[7; 200]).len(), 2 + 125);
    assert_eq!(&close(1000, "")[..], b"\x88\x02\x03\xe8");
    assert_eq!(&close(1009, "big")[..], b"\x88\x05\x03\xf1big");
}

#[test]
fn close_reason_cut_on_char_boundary() {
    // 62 two-byte chars = 124 bytes: only 61 (122 bytes) fit in 123.
    let reason = "é".repeat(62);
    let frame = close(1000, &reason);
    assert_eq!(frame[1] as usize, 2 + 122);
    assert!(std::str::from_utf8(&frame[4..]).is_ok());
    let frame = close(1000, &"a".repeat(300));
    assert_eq!(frame.len(), 2 + 125);
}

#[test]
fn deflated_text_sets_rsv1_and_inflates() {
    let payload = "{\"type\":\"patch\",\"ops\":[1,2,3]}".repeat(100);
    let frame = text_deflated(payload.as_bytes());
    assert_eq!(frame[0], 0xc1);
    let (len, start) = match frame[1] {
        126 => (u16::from_be_bytes([frame[2], frame[3]]) as usize, 4),
        n => (n as usize, 2),
    };
    assert_eq!(frame.len(), start + len);
    let mut data = frame[start..].to_vec();
    data.extend_from_slice(&deflate::TAIL);
    let mut inflater = flate2::Decompress::new(false);
    let mut out = Vec::with_capacity(payload.len() + 16);
    inflater
        .decompress_vec(&data, &mut out, flate2::FlushDecompress::Sync)
        .unwrap();
    assert_eq!(out, payload.as_bytes());
}
