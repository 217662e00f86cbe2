//! Reader tests: Frames the protocol does not allow, text that is not UTF-8, and close frames.

use super::*;

#[tokio::test]
async fn unmasked_frame_is_a_protocol_error() {
    let e = first_error(b"\x81\x02hi".to_vec(), false).await;
    assert!(matches!(e, ReadError::Protocol(_)), "{e:?}");
    assert_eq!(e.close_code().map(|c| c.code()), Some(1002));
}

#[tokio::test]
async fn invalid_utf8_split_across_fragments() {
    // "é" is C3 A9: valid when split, invalid when the second byte is wrong.
    let split = |second: u8| {
        [
            frame(MORE, false, opcode::TEXT, &[b'x', 0xc3]),
            frame(FIN, false, opcode::CONTINUATION, &[second]),
        ]
        .concat()
    };
    let (got, _) = read_all(split(0xa9), false, 100).await;
    assert_eq!(got, [t("xé")]);
    let e = first_error(split(b'('), false).await;
    assert!(matches!(e, ReadError::InvalidUtf8));
    assert_eq!(e.close_code().map(|c| c.code()), Some(1007));
}

#[tokio::test]
async fn reserved_bits_and_bad_frames_are_protocol_errors() {
    let started = frame(MORE, false, opcode::TEXT, b"a");
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("rsv2", vec![0xa1, 0x80, 0, 0, 0, 0], true),
        ("rsv3", vec![0x91, 0x80, 0, 0, 0, 0], true),
        (
            "rsv1 without deflate",
            frame(FIN, true, opcode::TEXT, b"a"),
            false,
        ),
        ("rsv1 on ping", frame(FIN, true, opcode::PING, b""), true),
        (
            "rsv1 on continuation",
            [started.clone(), frame(FIN, true, 0, b"b")].concat(),
            true,
        ),
        ("reserved opcode", frame(FIN, false, 0x3, b""), false),
        ("control opcode 0xb", frame(FIN, false, 0xb, b""), false),
        (
            "long ping",
            frame(FIN, false, opcode::PING, &[0; 126]),
            false,
        ),
        (
            "fragmented ping",
            frame(MORE, false, opcode::PING, b""),
            false,
        ),
        ("lone continuation", frame(FIN, false, 0, b"a"), false),
        (
            "text inside text",
            [started.clone(), text("b")].concat(),
            false,
        ),
        (
            "bad deflate data",
            frame(FIN, true, opcode::TEXT, &[0xff; 8]),
            true,
        ),
    ];
    for (name, wire, deflate) in cases {
        let e = first_error(wire, deflate).await;
        assert!(matches!(e, ReadError::Protocol(_)), "{name}: {e:?}");
    }
}

#[tokio::test]
async fn close_frames() {
    let close = |payload: &[u8]| frame(FIN, false, opcode::CLOSE, payload);
    let (got, end) = read_all([close(b""), text("after")].concat(), false, 100).await;
    assert_eq!(got, [Incoming::Close(None)]);
    assert!(
        matches!(end, ReadError::Closed),
        "nothing is read after a close"
    );
    for (payload, code) in [
        (&b"\x03\xe8"[..], 1000),
        (b"\x0f\xa0bye", 4000),
        (b"\x03\xf3", 1011),
    ] {
        let (got, _) = read_all(close(payload), false, 100).await;
        assert_eq!(got, [Incoming::Close(Some(code))]);
    }
    for payload in [
        &b"\x03"[..],
        b"\x03\xed",
        b"\x03\xe7",
        b"\x13\x88",
        b"\x03\xee",
    ] {
        let e = first_error(close(payload), false).await;
        assert!(matches!(e, ReadError::Protocol(_)), "{payload:?}: {e:?}");
    }
    let e = first_error(close(b"\x03\xe8\xff"), false).await;
    assert!(matches!(e, ReadError::InvalidUtf8));
}
