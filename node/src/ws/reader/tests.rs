//! Reader tests: client frames are built here, masked, and fed through a pipe.

use std::time::Duration;

use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress};
use tokio::io::{duplex, AsyncWriteExt, DuplexStream};

use super::*;
use crate::ws::frame::opcode;

mod allowance;
mod buffer;
mod cancel;
mod deflate;
mod errors;
mod sizes;
mod timing;

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
