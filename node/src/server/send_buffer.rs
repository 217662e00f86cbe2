//! What the kernel holds of each connection's outgoing bytes: the bytes it has not sent yet
//! (`ATRIUM_KERNEL_UNSENT_BYTES`), and, optionally, its whole send buffer
//! (`ATRIUM_SEND_BUFFER_BYTES`).
//!
//! Left to itself, Linux grows a connection's send buffer up to `tcp_wmem`'s maximum (4 MiB
//! by default) while the peer is slow to read. That memory is the kernel's, outside the
//! process and its memory budget: a hundred sockets of one address that ask for 2 MB
//! welcomes and never read held 281 MiB of the machine's TCP memory (the fifth review), and
//! a few addresses could reach the machine-wide limit, past which every connection on the
//! machine slows. A peer that does not read holds bytes the kernel has not sent (its window
//! is shut), so bounding those (`TCP_NOTSENT_LOWAT`) bounds what it can hold there, while
//! the bytes in flight to a distant reader still grow with the connection (no throughput
//! lost). It also makes the socket writable again each time its peer has taken that much,
//! which is how a slow reader of a large welcome is told from one that reads nothing
//! (`outbox::Budget`). A fixed send buffer cap bounds everything, at the price of
//! throughput to a distant reader (a cap of C bytes sends at most about 2C per round trip).

use std::os::fd::AsRawFd;

use tokio::net::TcpStream;

/// Caps `stream`'s send buffer at `bytes` (the kernel doubles the value for its own
/// bookkeeping); 0 leaves the kernel's own sizing. Failing is not fatal: the connection
/// keeps the kernel's default.
pub fn cap(stream: &TcpStream, bytes: usize) {
    set(
        stream,
        libc::SOL_SOCKET,
        libc::SO_SNDBUF,
        bytes,
        "cap a send buffer",
    );
}

/// Lets the kernel hold at most about `bytes` of `stream`'s outgoing bytes unsent (at
/// least [`MIN_UNSENT`]): a write past them takes what fits and the rest waits in the
/// node's send queue. 0 leaves no bound. Failing is not fatal.
pub fn unsent_at_most(stream: &TcpStream, bytes: usize) {
    let bytes = if bytes == 0 { 0 } else { bytes.max(MIN_UNSENT) };
    set(
        stream,
        libc::IPPROTO_TCP,
        libc::TCP_NOTSENT_LOWAT,
        bytes,
        "bound the unsent bytes",
    );
}

/// The smallest bound on unsent bytes: below it the writer would be woken for every few
/// segments a reader takes.
pub const MIN_UNSENT: usize = 16 * 1024;

#[allow(unsafe_code)]
fn set(stream: &TcpStream, level: libc::c_int, name: libc::c_int, bytes: usize, what: &str) {
    if bytes == 0 {
        return;
    }
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a pointer to a live local
    // c_int, on a descriptor the stream owns for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "could not {what}");
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
        let sock = option_of(&server, libc::SOL_SOCKET, libc::SO_SNDBUF);
        // Linux doubles what it is given.
        assert_eq!(sock, 2 * 65536);
        drop(client);
    }

    /// A peer that reads nothing leaves in the kernel about the bound of unsent bytes
    /// (and what its own small window took), however much is written; without the bound
    /// the kernel takes megabytes.
    #[tokio::test]
    async fn a_peer_that_reads_nothing_leaves_at_most_the_unsent_bound_in_the_kernel() {
        let bound = 64 * 1024;
        let taken_with = |unsent: usize| async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let client = TcpStream::connect(addr).await.unwrap();
            let (server, _) = listener.accept().await.unwrap();
            unsent_at_most(&server, unsent);
            assert_eq!(
                option_of(&server, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT),
                unsent
            );
            let chunk = vec![7u8; 64 * 1024];
            let mut taken = 0;
            // Non-blocking writes until the kernel takes no more (bounded: 64 MiB).
            for _ in 0..1024 {
                match server.try_write(&chunk) {
                    Ok(n) => taken += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        // Let the window and autotuning settle once, then try again.
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        match server.try_write(&chunk) {
                            Ok(n) => taken += n,
                            Err(_) => break,
                        }
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            drop(client);
            taken
        };
        let bounded = taken_with(bound).await;
        let unbounded = taken_with(0).await;
        // The client's receive buffer (up to 6 MiB with autotuning on loopback) takes some
        // before its window shuts; the unsent part is what the bound holds back.
        assert!(
            bounded < unbounded / 2,
            "bounded {bounded} bytes taken, unbounded {unbounded}"
        );
    }

    #[allow(unsafe_code)]
    fn option_of(stream: &TcpStream, level: libc::c_int, name: libc::c_int) -> usize {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes to a live local c_int.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                level,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        value as u32 as usize
    }
}
