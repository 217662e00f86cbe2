// Atrium's patch: not part of the pingora-proxy 0.9.1 release (see PATCHED.md).
//
// An HTTP/1 upgrade handed, once the upstream's `101` has gone downstream, to
// `ProxyHttp::upgraded_tunnel`, which moves the bytes between the two sockets itself instead of
// the proxy's two tasks, task pipe and body filters per chunk.

use std::net::TcpStream;
use std::os::fd::{AsRawFd, BorrowedFd};

use bytes::Bytes;
use futures::FutureExt;
use pingora_core::protocols::http::v1::client::HttpSession as HttpSessionV1;
use pingora_core::protocols::http::HttpTask;
use pingora_core::protocols::l4::stream::Stream as L4Stream;
use pingora_core::protocols::Stream;


/// An upgraded connection, handed over after the `101` was written downstream.
#[derive(Debug)]
pub struct UpgradedTunnel {
    /// The client's connection: a duplicate of the session's descriptor (the session keeps
    /// its own, closed when the request ends).
    pub downstream: TcpStream,
    /// The upstream connection, duplicated the same way.
    pub upstream: TcpStream,
    /// Upstream bytes the proxy had already read past the `101`: they go downstream first.
    pub upstream_preread: Option<Bytes>,
    /// The upstream had already ended (right after its `101`).
    pub upstream_ended: bool,
}

/// The two sockets an upgrade may be tunnelled on (the client's connection, as the service
/// unwrapped it, and the upstream's), duplicated before proxying starts; `None` unless both
/// are plain TCP sockets (not TLS, not virtual, not a mock).
pub(crate) fn sockets(downstream: &Stream, upstream: &HttpSessionV1) -> Option<(TcpStream, TcpStream)> {
    let down = duplicate(downstream)?;
    let up = duplicate(upstream.stream())?;
    Some((down, up))
}

fn duplicate(stream: &Stream) -> Option<TcpStream> {
    // Only a plain OS socket: a TLS stream is another type, whose bytes are not the socket's.
    let l4 = stream.as_any().downcast_ref::<L4Stream>()?;
    let fd = l4.as_raw_fd();
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` belongs to `stream`, which is borrowed (and so open) for this call; the
    // duplicate is a new descriptor owned by the returned socket.
    let owned = unsafe { BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .ok()?;
    let tcp = TcpStream::from(owned);
    // A Unix or virtual socket has no TCP peer address.
    tcp.peer_addr().ok()?;
    Some(tcp)
}

/// Upstream bytes the client session read past the `101` (at most one read's worth: what is
/// left is still on the socket), and whether the upstream already ended.
pub(crate) fn upstream_preread(upstream: &mut HttpSessionV1) -> (Option<Bytes>, bool) {
    match upstream.read_response_task().now_or_never() {
        Some(Ok(HttpTask::UpgradedBody(body, end))) => {
            let ended = end || body.is_none();
            (body, ended)
        }
        Some(Ok(HttpTask::Done)) | Some(Err(_)) => (None, true),
        _ => (None, false),
    }
}
