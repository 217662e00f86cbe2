//! A hand-made WebSocket client: any frame, any header, no automatic answers.

use super::*;

pub(super) const TEXT: u8 = 0x81;
pub(super) const TEXT_FIRST: u8 = 0x01;
pub(super) const CONT: u8 = 0x00;
pub(super) const CONT_LAST: u8 = 0x80;
pub(super) const BINARY: u8 = 0x82;
pub(super) const PING: u8 = 0x89;

#[derive(Debug)]
pub(super) enum Got {
    /// An upgrade answered with something other than 101 (its head).
    Refused(String),
    Text(Value),
    Close(Option<u16>),
    Eof,
    Timeout,
}

pub(super) struct Raw {
    pub(super) stream: TcpStream,
    pub(super) buf: Vec<u8>,
    /// The reason of the close frame received, once one was.
    pub(super) close_reason: String,
}

impl Raw {
    /// Upgrades `GET /files/{file}/ws`, with extra header lines (each ending
    /// in CRLF) and optionally a small receive buffer.
    pub(super) async fn connect(port: u16, file: &str, extra: &str, rcvbuf: Option<u32>) -> Raw {
        let upgraded = Raw::try_connect(port, file, extra, rcvbuf).await;
        upgraded.unwrap_or_else(|head| panic!("expected 101, got {head}"))
    }

    /// Reads until the ack of a patch; a reject or anything else fails the
    /// case, saying `what` went wrong.
    pub(super) async fn expect_ack(&mut self, what: &str) {
        loop {
            match self.next(WAIT).await {
                Got::Text(m) if m["type"] == "ack" => return,
                Got::Text(m) if m["type"] == "reject" => panic!("{what}: {m}"),
                Got::Text(_) => continue,
                other => panic!("{what}: expected an ack, got {other:?}"),
            }
        }
    }

    /// Upgrades, or returns the answer's head when it is not a 101.
    pub(super) async fn try_connect(
        port: u16,
        file: &str,
        extra: &str,
        rcvbuf: Option<u32>,
    ) -> Result<Raw, String> {
        Raw::try_connect_from([127, 0, 0, 1], port, file, extra, rcvbuf).await
    }

    /// [`Raw::try_connect`] from another loopback address (any 127/8 one is this host).
    pub(super) async fn try_connect_from(
        source: [u8; 4],
        port: u16,
        file: &str,
        extra: &str,
        rcvbuf: Option<u32>,
    ) -> Result<Raw, String> {
        let sock = tokio::net::TcpSocket::new_v4().expect("socket");
        sock.bind(std::net::SocketAddr::from((source, 0)))
            .expect("bind a loopback address");
        if let Some(size) = rcvbuf {
            sock.set_recv_buffer_size(size).expect("SO_RCVBUF");
        }
        let mut stream = tokio::time::timeout(WAIT, sock.connect(([127, 0, 0, 1], port).into()))
            .await
            .expect("connect timed out")
            .expect("connect");
        let path = format!("/files/{file}/ws");
        let (head, buf) = atrium_testkit::ws::upgrade(&mut stream, port, &path, extra).await;
        if !head.starts_with("HTTP/1.1 101") {
            return Err(head);
        }
        Ok(Raw {
            stream,
            buf,
            close_reason: String::new(),
        })
    }

    /// `n` sockets from `source`, each welcomed with the room's edit key, each in a slot
    /// an attacker task takes once.
    pub(super) async fn edit_keys_from(
        source: [u8; 4],
        r: &Room,
        n: usize,
    ) -> Mutex<Vec<Option<Raw>>> {
        let mut sockets = Vec::new();
        for _ in 0..n {
            let upgraded = Raw::try_connect_from(source, r.node.port, &r.id, "", None).await;
            let mut raw = upgraded.expect("an upgrade");
            raw.text(&Hello::key(&r.edit_key).to_json().to_string())
                .await;
            raw.welcome().await;
            sockets.push(Some(raw));
        }
        Mutex::new(sockets)
    }

    /// Connects and says hello; waits for the welcome.
    pub(super) async fn join(port: u16, file: &str, hello: &Hello, extra: &str) -> Raw {
        let mut raw = Raw::connect(port, file, extra, None).await;
        raw.text(&hello.to_json().to_string()).await;
        raw.welcome().await;
        raw
    }

    /// Waits for the welcome (which the node sends first: see
    /// `the_welcome_is_the_first_message`); anything else is skipped.
    pub(super) async fn welcome(&mut self) -> Value {
        loop {
            match self.next(WAIT).await {
                Got::Text(w) if w["type"] == "welcome" => return w,
                Got::Text(m) if PRESENCE_TYPES.contains(&s(&m["type"])) => continue,
                other => panic!("expected a welcome, got {other:?}"),
            }
        }
    }

    pub(super) async fn send(&mut self, bytes: &[u8]) {
        // The node may close before it reads everything: ignore write errors.
        let _ = tokio::time::timeout(WAIT, self.stream.write_all(bytes)).await;
    }

    pub(super) async fn text(&mut self, text: &str) {
        self.send(&client_frame(TEXT, text.as_bytes())).await;
    }

    /// The next text message or close (pings and pongs skipped).
    pub(super) async fn next(&mut self, dur: Duration) -> Got {
        let deadline = tokio::time::Instant::now() + dur;
        loop {
            if let Some((first, payload, used)) = server_frame(&self.buf) {
                self.buf.drain(..used);
                match first & 0x0f {
                    0x1 => {
                        let payload = if first & 0x40 != 0 {
                            inflate(&payload)
                        } else {
                            payload
                        };
                        return Got::Text(serde_json::from_slice(&payload).expect("JSON text"));
                    }
                    0x8 => {
                        self.close_reason =
                            String::from_utf8_lossy(payload.get(2..).unwrap_or(&[])).into_owned();
                        return Got::Close(
                            (payload.len() >= 2)
                                .then(|| u16::from_be_bytes([payload[0], payload[1]])),
                        );
                    }
                    _ => continue,
                }
            }
            let mut chunk = [0u8; 16384];
            match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Err(_) => return Got::Timeout,
                Ok(Ok(0)) | Ok(Err(_)) => return Got::Eof,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Reads (skipping messages) until a close frame; its code.
    pub(super) async fn close_code(&mut self, dur: Duration) -> Option<u16> {
        let deadline = Instant::now() + dur;
        loop {
            match self
                .next(deadline.saturating_duration_since(Instant::now()))
                .await
            {
                Got::Text(_) => continue,
                Got::Close(code) => return code,
                other => panic!("expected a close frame within {dur:?}, got {other:?}"),
            }
        }
    }

    /// The next message, which must be a reject; returns it.
    pub(super) async fn reject(&mut self) -> Value {
        loop {
            match self.next(WAIT).await {
                Got::Text(m) if m["type"] == "reject" => return m,
                // Presence traffic and other people's edits.
                Got::Text(m) if m["type"] == "patch" || PRESENCE_TYPES.contains(&s(&m["type"])) => {
                    continue
                }
                other => panic!("expected a reject, got {other:?}"),
            }
        }
    }
}

/// (first byte, payload, bytes used) of the first whole server frame in `buf`.
pub(super) fn server_frame(buf: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    let [b0, b1, ..] = *buf else { return None };
    assert_eq!(b1 & 0x80, 0, "server frames are never masked");
    let (len, at) = match b1 & 0x7f {
        126 => (
            u16::from_be_bytes(buf.get(2..4)?.try_into().ok()?) as usize,
            4,
        ),
        127 => (
            u64::from_be_bytes(buf.get(2..10)?.try_into().ok()?) as usize,
            10,
        ),
        n => (n as usize, 2),
    };
    let payload = buf.get(at..at + len)?.to_vec();
    Some((b0, payload, at + len))
}

/// One request written by hand (for paths an HTTP library would refuse).
pub(super) async fn raw_http(port: u16, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    stream.write_all(request).await.expect("write");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(WAIT, stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// Answers to a raw socket upgrade: the status line and the headers.
pub(super) async fn upgrade_answer(port: u16, file: &str, extra: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let req = format!(
        "GET /files/{file}/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n{extra}\r\n"
    );
    stream.write_all(req.as_bytes()).await.expect("send");
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(WAIT, stream.read(&mut buf))
        .await
        .expect("answer in time")
        .expect("read");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}
