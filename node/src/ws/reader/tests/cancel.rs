//! Reader tests about cancellation: `next()` dropped at every await loses nothing.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::FutureExt;
use tokio::io::ReadBuf;

use super::*;

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
