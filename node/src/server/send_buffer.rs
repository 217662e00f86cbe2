//! The kernel's send buffer of each connection, capped (`ATRIUM_SEND_BUFFER_BYTES`).
//!
//! Left to itself, Linux grows a connection's send buffer up to `tcp_wmem`'s maximum (4 MiB
//! by default) while the peer is slow to read. That memory is the kernel's, outside the
//! process and its memory budget: a hundred sockets of one address that ask for 2 MB
//! welcomes and never read held 281 MiB of the machine's TCP memory (the fifth review), and
//! a few addresses could reach the machine-wide limit, past which every connection on the
//! machine slows. A fixed cap bounds it per socket, at the price of throughput to a distant
//! reader (a cap of C bytes sends at most about 2C per round trip).

use std::os::fd::AsRawFd;

use tokio::net::TcpStream;

/// Caps `stream`'s send buffer at `bytes` (the kernel doubles the value for its own
/// bookkeeping); 0 leaves the kernel's own sizing. Failing is not fatal: the connection
/// keeps the kernel's default.
#[allow(unsafe_code)]
pub fn cap(stream: &TcpStream, bytes: usize) {
    if bytes == 0 {
        return;
    }
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a pointer to a live local
    // c_int, on a descriptor the stream owns for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "could not cap a send buffer");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_capped_send_buffer_is_what_the_kernel_reports() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        cap(&server, 65536);
        let sock = send_buffer_of(&server);
        // Linux doubles what it is given.
        assert_eq!(sock, 2 * 65536);
        drop(client);
    }

    #[allow(unsafe_code)]
    fn send_buffer_of(stream: &TcpStream) -> usize {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes to a live local c_int.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        value as usize
    }
}
