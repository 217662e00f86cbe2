//! The two halves of an upgraded connection, as the reader and the writer use them.

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
            let early = std::io::Cursor::new(parts.read_buf);
            (Box::new(early.chain(read)), Box::new(write))
        }
        Err(upgraded) => {
            let (read, write) = tokio::io::split(TokioIo::new(upgraded));
            (Box::new(read), Box::new(write))
        }
    }
}
