//! A raw WebSocket, byte by byte, for what a well-behaved client never sends.

use super::*;

/// A WebSocket client written by hand on a plain TCP stream, for tests that
/// need a peer which does not do what a library does for it (answer pings).
pub struct RawWs {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

/// What [`RawWs::read_frame`] got.
#[derive(Debug)]
pub enum RawFrame {
    /// opcode and payload of one (unfragmented) frame.
    Frame(u8, Vec<u8>),
    /// The server closed the TCP connection (or reset it).
    Eof,
    Timeout,
}

impl RawWs {
    /// Connects and completes the WebSocket handshake for a file's socket.
    pub async fn connect(node: &Node, file: &str) -> RawWs {
        let mut stream = tokio::time::timeout(WAIT, TcpStream::connect(("127.0.0.1", node.port)))
            .await
            .expect("connect timed out")
            .expect("connect to node");
        let path = format!("/files/{file}/ws");
        let (head, buf) = atrium_testkit::ws::upgrade(&mut stream, node.port, &path, "").await;
        assert!(
            head.starts_with("HTTP/1.1 101"),
            "expected 101 Switching Protocols, got {head}"
        );
        RawWs { stream, buf }
    }

    /// Sends one masked text frame.
    pub async fn send_text(&mut self, text: &str) {
        use tokio::io::AsyncWriteExt;
        let frame = client_frame(0x81, text.as_bytes());
        tokio::time::timeout(WAIT, self.stream.write_all(&frame))
            .await
            .expect("raw send timed out")
            .expect("raw send failed");
    }

    /// Reads the next frame (unmasked, as a server sends them) within `dur`.
    pub async fn read_frame(&mut self, dur: Duration) -> RawFrame {
        use tokio::io::AsyncReadExt;
        let deadline = tokio::time::Instant::now() + dur;
        loop {
            if let Some((opcode, payload, used)) = parse_server_frame(&self.buf) {
                self.buf.drain(..used);
                return RawFrame::Frame(opcode, payload);
            }
            let mut chunk = [0u8; 16384];
            match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Err(_) => return RawFrame::Timeout,
                Ok(Ok(0)) | Ok(Err(_)) => return RawFrame::Eof,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Reads frames until a text frame comes; returns it parsed.
    pub async fn recv_json(&mut self, dur: Duration) -> Value {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.read_frame(left).await {
                RawFrame::Frame(0x1, payload) => {
                    return serde_json::from_slice(&payload).expect("a JSON text frame")
                }
                RawFrame::Frame(_, _) => continue,
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }
}

/// The mask of every frame the raw clients send (any mask will do).
pub const MASK: [u8; 4] = [0x5a, 0x13, 0xc7, 0x81];

/// A masked client frame with the given first byte (FIN, RSV1, opcode).
pub fn client_frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![first];
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= 0xffff {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&MASK);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
    out
}

/// (opcode, payload, bytes used) of the first whole frame in `buf`.
fn parse_server_frame(buf: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let opcode = buf[0] & 0x0f;
    let masked = buf[1] & 0x80 != 0;
    let (len, mut at) = match buf[1] & 0x7f {
        126 => {
            if buf.len() < 4 {
                return None;
            }
            (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4)
        }
        127 => {
            if buf.len() < 10 {
                return None;
            }
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[2..10]);
            (u64::from_be_bytes(b) as usize, 10)
        }
        n => (n as usize, 2),
    };
    let mask = if masked {
        if buf.len() < at + 4 {
            return None;
        }
        let m = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
        at += 4;
        Some(m)
    } else {
        None
    };
    if buf.len() < at + len {
        return None;
    }
    let mut payload = buf[at..at + len].to_vec();
    if let Some(m) = mask {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= m[i % 4];
        }
    }
    Some((opcode, payload, at + len))
}

/// Raises this process's open-file soft limit to its hard limit (children
/// started afterwards inherit it); returns the new soft limit.
pub fn raise_fd_limit() -> libc::rlim_t {
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim),
            0,
            "getrlimit"
        );
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0, "setrlimit");
        }
        lim.rlim_cur
    }
}
