//! The WebSocket frame reader (`ws::Reader`) over arbitrary client bytes.
//!
//! Input: one byte of settings (deflate agreed or not, the message limit, how
//! the bytes are cut into reads), then the byte stream a client sends.
//!
//! Properties: no panic and no allocation beyond the limits (libFuzzer's
//! `-malloc_limit_mb` catches that); every text message is valid UTF-8 of at
//! most the limit, after inflation too; after an error or a close the reader
//! only says `Closed`; and the messages are the same however the stream is cut
//! into reads (one read of everything, or many short ones).

#![no_main]

use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use atrium_node::ws::{Incoming, ReadError, Reader, ReaderLimits};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, ReadBuf};

/// Gives its bytes in reads of at most `step` bytes (varying), then EOF.
struct Chunked<'a> {
    data: &'a [u8],
    step: usize,
    turn: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let turn = self.turn;
        self.turn += 1;
        let want = 1 + (turn * 7 + 3) % self.step.max(1);
        let n = want.min(self.data.len()).min(buf.remaining());
        let (head, tail) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = tail;
        Poll::Ready(Ok(()))
    }
}

/// What a reader made of the stream: messages, then how it ended.
fn outcome(r: &Result<Incoming, ReadError>) -> String {
    match r {
        Ok(m) => format!("{m:?}"),
        Err(e) => format!("error {:?}", e.close_code()),
    }
}

async fn read_all<R: AsyncRead + Unpin>(io: R, limits: ReaderLimits, deflate: bool) -> Vec<String> {
    let mut reader = Reader::new(io, limits, deflate);
    let mut seen = Vec::new();
    // Each message needs at least two bytes, so this bounds the loop.
    for _ in 0..4096 {
        let next = reader.next().await;
        if let Ok(Incoming::Text(t)) = &next {
            assert!(t.len() <= limits.max_message, "text over the limit");
        }
        let done = matches!(next, Err(_) | Ok(Incoming::Close(_)));
        seen.push(outcome(&next));
        if done {
            // Finished readers stay finished.
            assert!(matches!(reader.next().await, Err(ReadError::Closed)));
            break;
        }
    }
    seen
}

static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let Some((&settings, stream)) = data.split_first() else {
        return;
    };
    let deflate = settings & 0x01 != 0;
    let limits = ReaderLimits {
        max_message: match (settings >> 1) & 0x03 {
            0 => 16,
            1 => 1024,
            2 => 64 * 1024,
            _ => 1 << 20,
        },
        fragment_timeout: Duration::from_secs(10),
        inflate_ratio: if settings & 0x80 != 0 { 4 } else { 0 },
    };
    let step = 1 + usize::from(settings >> 3);
    let rt = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    });
    rt.block_on(async {
        let whole = read_all(stream, limits, deflate).await;
        let cut = read_all(
            Chunked {
                data: stream,
                step,
                turn: 0,
            },
            limits,
            deflate,
        )
        .await;
        assert_eq!(whole, cut, "messages depend on how the stream was cut");
    });
});
