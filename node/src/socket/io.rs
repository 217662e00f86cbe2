//! The two halves of an upgraded connection, as the reader and the writer use them.

use bytes::Bytes;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;

pub(super) type ReadIo = Box<dyn AsyncRead + Send + Unpin>;
pub(super) type WriteIo = Box<dyn AsyncWrite + Send + Unpin>;

/// The two halves of an upgraded connection. A plain TCP socket splits without
/// a lock; bytes hyper read past the handshake are put back in front.
pub(super) fn split(upgraded: Upgraded) -> (ReadIo, WriteIo) {
    match upgraded.downcast::<TokioIo<TcpStream>>() {
        Ok(parts) => {
            let (read, write) = parts.io.into_inner().into_split();
            let read: ReadIo = match early_bytes(parts.read_buf) {
                None => Box::new(read),
                Some(early) => Box::new(std::io::Cursor::new(early).chain(read)),
            };
            (read, Box::new(write))
        }
        Err(upgraded) => {
            let (read, write) = tokio::io::split(TokioIo::new(upgraded));
            (Box::new(read), Box::new(write))
        }
    }
}

/// The bytes hyper read past the handshake, in a buffer of their own: hyper's are a
/// view into its whole read buffer (8 KB), which would stay allocated for the life
/// of the socket.
fn early_bytes(read_buf: Bytes) -> Option<Bytes> {
    (!read_buf.is_empty()).then(|| Bytes::copy_from_slice(&read_buf))
}

#[cfg(test)]
mod tests;
