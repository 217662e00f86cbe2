//! Reader tests about time and cancellation: fragment timeout, buffer size,
//! and `next()` dropped at every await.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::FutureExt;
use tokio::io::ReadBuf;

use super::*;

#[tokio::test]
async fn slow_fragments_time_out() {
    let (mut client, server) = duplex(1024);
    let limits = ReaderLimits {
        max_message: 1000,
        fragment_timeout: Duration::from_millis(150),
        inflate_ratio: 0,
    };
    let mut r = Reader::new(server, limits, false);
    client
        .write_all(&frame(MORE, false, opcode::TEXT, b"a"))
        .await
        .unwrap();
    let started = Instant::now();
    // Pings keep arriving, but the message does not complete.
    let pinger = tokio::spawn(async move {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let ping = frame(FIN, false, opcode::PING, b"");
            if client.write_all(&ping).await.is_err() {
                break;
            }
        }
    });
    let e = loop {
        match r.next().await {
            Ok(Incoming::Ping(_)) => continue,
            other => break other,
        }
    };
    assert!(matches!(e, Err(ReadError::FragmentTimeout)), "{e:?}");
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(
        ReadError::FragmentTimeout.close_code().map(|c| c.code()),
        Some(1008)
    );
    drop(r);
    pinger.await.unwrap();
}

#[tokio::test]
async fn buffer_shrinks_after_a_big_frame() {
    let big = "z".repeat(200_000);
    let mut r = reader([text(&big), text("small")].concat(), limits(1 << 20), false);
    assert_eq!(r.next().await.unwrap(), t(&big));
    assert!(r.buf.capacity() <= BUF_START, "{}", r.buf.capacity());
    assert_eq!(r.next().await.unwrap(), t("small"));
    assert!(r.buf.capacity() <= BUF_START);
}

#[tokio::test]
async fn buffer_follows_the_bytes_not_the_header() {
    // A header claiming 1 MB, then only 10 KB of payload.
    let wire = frame(FIN, false, opcode::TEXT, &[b'a'; 1 << 20]);
    let (mut client, server) = duplex(1 << 16);
    client.write_all(&wire[..10_000]).await.unwrap();
    let mut r = Reader::new(server, limits(1 << 20), false);
    let waited = tokio::time::timeout(Duration::from_millis(50), r.next()).await;
    assert!(waited.is_err(), "the message is not complete");
    assert!(r.buf.capacity() <= 32 * 1024, "{}", r.buf.capacity());
    let rest = wire[10_000..].to_vec();
    let writer = tokio::spawn(async move { client.write_all(&rest).await });
    let message = r.next().await.unwrap();
    writer.await.unwrap().unwrap();
    assert_eq!(message, Incoming::Text("a".repeat(1 << 20)));
}

/// Hands out one byte per read, answering `Pending` in between.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    /// Flips at every poll: every other poll (the first included) is `Pending`.
    pending: bool,
}

impl AsyncRead for Trickle {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        self.pending = !self.pending;
        if self.pending {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(&byte) = self.data.get(self.at) {
            buf.put_slice(&[byte]);
            self.at += 1;
        }
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn next_is_cancel_safe() {
    let long = "L".repeat(5000);
    let packed = "compressed ".repeat(300);
    let mut wire = [text("one"), frame(MORE, false, opcode::TEXT, b"fr")].concat();
    wire.extend(frame(FIN, false, opcode::PING, b"mid"));
    wire.extend(frame(MORE, false, opcode::CONTINUATION, b"ag"));
    wire.extend(frame(FIN, false, opcode::CONTINUATION, b"ment"));
    wire.extend(text(&long));
    wire.extend(frame(
        FIN,
        true,
        opcode::TEXT,
        &client_deflate(packed.as_bytes()),
    ));
    wire.extend(frame(FIN, false, opcode::CLOSE, b"\x03\xe8"));
    let io = Trickle {
        data: wire.clone(),
        at: 0,
        pending: false,
    };
    let mut r = Reader::new(io, limits(10_000), true);
    let mut got = Vec::new();
    let mut polls = 0;
    loop {
        polls += 1;
        // Each call is polled once, then dropped: a cancelled `next()`.
        match r.next().now_or_never() {
            None => continue,
            Some(Ok(m)) => got.push(m),
            Some(Err(e)) => {
                assert!(matches!(e, ReadError::Closed), "{e:?}");
                break;
            }
        }
    }
    let expected = [
        t("one"),
        Incoming::Ping(Bytes::from_static(b"mid")),
        t("fragment"),
        t(&long),
        t(&packed),
        Incoming::Close(Some(1000)),
    ];
    assert_eq!(got, expected);
    // Each byte arrived in a call that was then cancelled at the next `Pending`.
    assert!(
        polls >= wire.len(),
        "{polls} calls for {} bytes",
        wire.len()
    );
}
