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

#[test]
fn outgoing_compresses_once_when_large() {
    let payload = Bytes::from("{\"op\":\"insert\",\"text\":\"hello\"}".repeat(64));
    let msg = Outgoing::new(payload.clone(), true);
    assert_eq!(msg.payload_len(), payload.len());
    assert_eq!(msg.payload(), &payload[..]);
    assert!(msg.deflated.get().is_none(), "lazy");
    assert_eq!(msg.frame(false), text(&payload));
    assert!(
        msg.deflated.get().is_none(),
        "plain sockets do not compress"
    );
    let first = msg.frame(true);
    let second = msg.frame(true);
    assert_eq!(first[0], 0xc1);
    assert!(first.len() < payload.len() / 2);
    // The same buffer, not a second compression.
    assert_eq!(first.as_ptr(), second.as_ptr());
    assert_eq!(first.as_ptr(), msg.deflated.get().unwrap().as_ptr());
}

#[test]
fn outgoing_never_compresses_small_or_presence() {
    let small = Outgoing::new(Bytes::from(vec![b'a'; COMPRESS_THRESHOLD - 1]), true);
    let presence = Outgoing::new(Bytes::from(vec![b'a'; 10_000]), false);
    for msg in [small, presence] {
        let frame = msg.frame(true);
        assert_eq!(frame[0], 0x81);
        assert_eq!(frame.as_ptr(), msg.frame(false).as_ptr());
        assert!(msg.deflated.get().is_none());
    }
    let at_threshold = Outgoing::new(Bytes::from(vec![b'a'; COMPRESS_THRESHOLD]), true);
    assert_eq!(at_threshold.frame(true)[0], 0xc1);
}

#[test]
fn outgoing_keeps_plain_when_deflate_does_not_help() {
    let mut x: u32 = 99;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    let msg = Outgoing::new(Bytes::from(noise), true);
    assert_eq!(msg.frame(true).as_ptr(), msg.frame(false).as_ptr());
}
