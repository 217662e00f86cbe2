//! Reader tests: client frames are built here, masked, and fed through a pipe.

use flate2::{Compress, Compression, FlushCompress};
use tokio::io::{duplex, AsyncWriteExt, DuplexStream};

use super::*;

const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];
const FIN: bool = true;
const MORE: bool = false;

/// A masked client frame.
fn frame(fin: bool, rsv1: bool, op: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![u8::from(fin) << 7 | u8::from(rsv1) << 6 | op];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n if n <= 0xffff => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&MASK);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    out
}

fn text(payload: &str) -> Vec<u8> {
    frame(FIN, false, opcode::TEXT, payload.as_bytes())
}

/// Raw DEFLATE of `payload`, sync flushed, tail removed: what a browser sends.
fn client_deflate(payload: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::fast(), false);
    let mut out = Vec::with_capacity(payload.len() + 1024);
    c.compress_vec(payload, &mut out, FlushCompress::Sync)
        .unwrap();
    assert_eq!(c.total_in() as usize, payload.len());
    assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
    out.truncate(out.len() - 4);
    out
}

fn limits(max_message: usize) -> ReaderLimits {
    ReaderLimits {
        max_message,
        fragment_timeout: Duration::from_secs(10),
        inflate_ratio: 0,
    }
}

/// A reader of `bytes`, then end of stream.
fn reader(bytes: Vec<u8>, limits: ReaderLimits, deflate: bool) -> Reader<DuplexStream> {
    let (mut client, server) = duplex(1 << 16);
    tokio::spawn(async move {
        let _ = client.write_all(&bytes).await;
    });
    Reader::new(server, limits, deflate)
}

/// Everything read from `bytes` up to and including the first error.
async fn read_all(bytes: Vec<u8>, deflate: bool, max: usize) -> (Vec<Incoming>, ReadError) {
    let mut r = reader(bytes, limits(max), deflate);
    let mut got = Vec::new();
    loop {
        match r.next().await {
            Ok(m) => got.push(m),
            Err(e) => return (got, e),
        }
    }
}

async fn first_error(bytes: Vec<u8>, deflate: bool) -> ReadError {
    read_all(bytes, deflate, 1 << 20).await.1
}

fn t(s: &str) -> Incoming {
    Incoming::Text(s.to_owned())
}

#[tokio::test]
async fn masked_text_then_eof() {
    let (got, end) = read_all(text("Hello"), false, 100).await;
    assert_eq!(got, [t("Hello")]);
    assert!(matches!(end, ReadError::Closed));
    assert_eq!(end.close_code(), None);
}

#[tokio::test]
async fn header_forms_and_exact_limit() {
    let mid = "m".repeat(300);
    let big = "b".repeat(70_000);
    let bytes = [text(""), text(&mid), text(&big)].concat();
    let (got, end) = read_all(bytes, false, 70_000).await;
    assert_eq!(got, [t(""), t(&mid), t(&big)]);
    assert!(matches!(end, ReadError::Closed));
}

#[tokio::test]
async fn fragmented_text_with_pings_between() {
    let message = "fragments, one to three bytes each: ünïcødé too";
    let bytes = message.as_bytes();
    let mut wire = Vec::new();
    let mut at = 0;
    let mut step = 1;
    while at < bytes.len() {
        let end = (at + step).min(bytes.len());
        let op = if at == 0 {
            opcode::TEXT
        } else {
            opcode::CONTINUATION
        };
        wire.extend(frame(end == bytes.len(), false, op, &bytes[at..end]));
        wire.extend(frame(FIN, false, opcode::PING, &[at as u8]));
        at = end;
        step = step % 3 + 1;
    }
    let (got, _) = read_all(wire, false, 1000).await;
    let pings = got
        .iter()
        .filter(|m| matches!(m, Incoming::Ping(_)))
        .count();
    assert!(pings > 10);
    // The message comes before the ping that followed its last frame.
    assert_eq!(got[got.len() - 2], t(message));
    assert!(matches!(got.last(), Some(Incoming::Ping(_))));
}

#[tokio::test]
async fn unmasked_frame_is_a_protocol_error() {
    let e = first_error(b"\x81\x02hi".to_vec(), false).await;
    assert!(matches!(e, ReadError::Protocol(_)), "{e:?}");
    assert_eq!(e.close_code().map(|c| c.code()), Some(1002));
}

#[tokio::test]
async fn oversize_header_refused_before_payload() {
    // Only the header is sent, and the pipe stays open: waiting would hang.
    let header = frame(FIN, false, opcode::TEXT, &[0; 1001])[..8].to_vec();
    let (mut client, server) = duplex(64);
    client.write_all(&header).await.unwrap();
    let mut r = Reader::new(server, limits(1000), false);
    let e = tokio::time::timeout(Duration::from_secs(5), r.next())
        .await
        .unwrap();
    assert!(matches!(e, Err(ReadError::TooBig)));
    assert_eq!(ReadError::TooBig.close_code().map(|c| c.code()), Some(1009));
    // A 2^62-byte header is refused the same way.
    let huge = [0x81, 0xff, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4].to_vec();
    assert!(matches!(first_error(huge, false).await, ReadError::TooBig));
    drop(client);
}

#[tokio::test]
async fn reassembled_message_over_limit() {
    let wire = [
        frame(MORE, false, opcode::TEXT, &[b'a'; 600]),
        frame(FIN, false, opcode::CONTINUATION, &[b'a'; 401]),
    ]
    .concat();
    let (got, e) = read_all(wire, false, 1000).await;
    assert!(got.is_empty());
    assert!(matches!(e, ReadError::TooBig));
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
async fn compressed_messages_decode() {
    let message = "{\"type\":\"patch\",\"ops\":[\"insert\",42,\"hello\"]}".repeat(50);
    let data = client_deflate(message.as_bytes());
    let (a, b) = data.split_at(data.len() / 3);
    let (b, c) = b.split_at(b.len() / 2);
    let wire = [
        frame(FIN, true, opcode::TEXT, &data),
        frame(FIN, true, opcode::TEXT, &[0x00]),
        // Fragmented: RSV1 on the first frame only.
        frame(MORE, true, opcode::TEXT, a),
        frame(MORE, false, opcode::CONTINUATION, b),
        frame(FIN, false, opcode::CONTINUATION, c),
        text("plain"),
    ]
    .concat();
    let (got, end) = read_all(wire, true, message.len()).await;
    assert_eq!(got, [t(&message), t(""), t(&message), t("plain")]);
    assert!(matches!(end, ReadError::Closed));
}

#[tokio::test]
async fn compressed_bomb_is_too_big() {
    // Small on the wire, 8 MiB inflated. (How small depends on the zlib backend
    // the workspace unifies on: zlib-ng's fastest level matches less.)
    let data = client_deflate(&vec![b'a'; 8 << 20]);
    assert!(data.len() < 256 * 1024, "{} bytes on the wire", data.len());
    let e = first_error(frame(FIN, true, opcode::TEXT, &data), true).await;
    assert!(matches!(e, ReadError::TooBig), "{e:?}");
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

#[tokio::test]
async fn binary_and_pong() {
    let wire = [
        frame(FIN, false, opcode::BINARY, &[1, 2, 3]),
        frame(FIN, false, opcode::PONG, b"x"),
        frame(MORE, false, opcode::BINARY, &[0; 300]),
        frame(FIN, false, opcode::CONTINUATION, &[0; 300]),
    ]
    .concat();
    let (got, _) = read_all(wire, false, 1000).await;
    assert_eq!(got, [Incoming::Binary, Incoming::Pong, Incoming::Binary]);
}

mod timing;
