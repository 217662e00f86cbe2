//! The buffer sockets read into while they wait between frames: one per thread,
//! so an idle socket holds no read buffer of its own.

use std::cell::RefCell;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{ready, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Bytes one read may take: what a socket's own buffer started at before.
const SIZE: usize = 4 * 1024;

thread_local! {
    static SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0; SIZE].into_boxed_slice());
}

/// Reads once from `io` and appends what came to `buf`, which grows by exactly
/// that. Cancel-safe: nothing is kept until the read completes.
pub(super) async fn read<R: AsyncRead + Unpin>(
    io: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    poll_fn(|cx| {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let mut read = ReadBuf::new(&mut scratch[..]);
            ready!(Pin::new(&mut *io).poll_read(cx, &mut read))?;
            let got = read.filled();
            buf.reserve_exact(got.len());
            buf.extend_from_slice(got);
            Poll::Ready(Ok(got.len()))
        })
    })
    .await
}
