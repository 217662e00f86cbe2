//! A WebSocket client of one file, and what it hears.

use super::*;

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// What came out of a socket.
#[derive(Debug)]
pub enum Event {
    Json(Value),
    /// A close frame, with its code when it had one.
    Close(Option<u16>),
    /// The stream ended without a close frame.
    Ended,
    Error(String),
    Timeout,
}

/// Message types that the server may send at any time (presence traffic);
/// skipped by the `recv*` helpers unless asked for.
pub const PRESENCE_TYPES: &[&str] = &["presences", "join", "leave", "presence-rate", "notice"];

/// The first message of a socket.
#[derive(Clone, Debug)]
pub struct Hello {
    pub token: Option<String>,
    pub key: Option<String>,
    pub client: String,
    pub since: Option<u64>,
    pub name: Option<String>,
}

impl Hello {
    pub fn token(token: &str) -> Hello {
        Hello {
            token: Some(token.to_string()),
            key: None,
            client: secret(),
            since: None,
            name: None,
        }
    }

    pub fn key(key: &str) -> Hello {
        Hello {
            token: None,
            key: Some(key.to_string()),
            client: secret(),
            since: None,
            name: Some("Guest".to_string()),
        }
    }

    pub fn anonymous() -> Hello {
        Hello {
            token: None,
            key: None,
            client: secret(),
            since: None,
            name: Some("Nobody".to_string()),
        }
    }

    pub fn since(mut self, since: Option<u64>) -> Hello {
        self.since = since;
        self
    }

    pub fn to_json(&self) -> Value {
        json!({
            "type": "hello",
            "token": self.token,
            "key": self.key,
            "client": self.client,
            "since": self.since,
            "name": self.name,
        })
    }
}

/// A WebSocket client of one file.
pub struct Client {
    pub ws: Ws,
}

impl Client {
    /// Opens the socket of a file (no hello yet).
    pub async fn connect(node: &Node, file: &str) -> Client {
        let url = node.ws_url(file);
        let (ws, _resp) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
            .await
            .expect("websocket upgrade timed out")
            .expect("websocket upgrade failed");
        Client { ws }
    }

    /// Opens the socket, sends `hello` and waits for `welcome` (returned).
    pub async fn join(node: &Node, file: &str, hello: &Hello) -> (Client, Value) {
        let mut c = Client::connect(node, file).await;
        c.send_json(&hello.to_json()).await;
        let welcome = c.recv_json().await;
        assert_eq!(
            welcome["type"], "welcome",
            "expected welcome, got {welcome}"
        );
        (c, welcome)
    }

    /// Joins `file` once per hello, in order: the sockets and their welcomes.
    pub async fn join_each<const N: usize>(
        node: &Node,
        file: &str,
        hellos: [Hello; N],
    ) -> [(Client, Value); N] {
        let mut joined = Vec::with_capacity(N);
        for hello in &hellos {
            joined.push(Client::join(node, file, hello).await);
        }
        match joined.try_into() {
            Ok(all) => all,
            Err(_) => unreachable!("one join per hello"),
        }
    }

    /// Opens the socket and sends `hello`, expecting the server to close it.
    pub async fn join_expect_close(node: &Node, file: &str, hello: &Hello, code: u16) {
        let mut c = Client::connect(node, file).await;
        c.send_json(&hello.to_json()).await;
        // No welcome (nor anything else about the file) may come first.
        match c.next_non_presence(WAIT).await {
            Event::Close(got) => assert_eq!(got, Some(code), "hello closed with the wrong code"),
            other => panic!("expected a close with {code} after hello, got {other:?}"),
        }
    }

    pub async fn send_msg(&mut self, msg: Message) {
        tokio::time::timeout(WAIT, self.ws.send(msg))
            .await
            .expect("websocket send timed out")
            .expect("websocket send failed");
    }

    pub async fn send_text(&mut self, text: String) {
        self.send_msg(Message::text(text)).await;
    }

    pub async fn send_json(&mut self, v: &Value) {
        self.send_text(v.to_string()).await;
    }

    pub async fn send_patch(&mut self, id: u64, ops: Vec<Value>) {
        self.send_json(&patch_msg(id, ops)).await;
    }

    /// The next thing on the socket, presence traffic included.
    pub async fn next_event(&mut self, dur: Duration) -> Event {
        let deadline = tokio::time::Instant::now() + dur;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return Event::Timeout,
                Ok(None) => return Event::Ended,
                Ok(Some(Err(e))) => return Event::Error(e.to_string()),
                Ok(Some(Ok(msg))) => match msg {
                    Message::Text(t) => {
                        let v: Value = serde_json::from_str(t.as_str()).unwrap_or_else(|e| {
                            panic!("server sent a text frame that is not JSON ({e}): {t}")
                        });
                        assert!(
                            v.get("type").and_then(Value::as_str).is_some(),
                            "server message without a string `type`: {v}"
                        );
                        return Event::Json(v);
                    }
                    Message::Binary(b) => {
                        panic!("server sent a binary frame ({} bytes)", b.len())
                    }
                    Message::Close(frame) => return Event::Close(frame.map(|f| u16::from(f.code))),
                    Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
                },
            }
        }
    }

    /// The next event that is not presence traffic.
    pub async fn next_non_presence(&mut self, dur: Duration) -> Event {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_event(left).await {
                Event::Json(v) if PRESENCE_TYPES.contains(&s(&v["type"])) => continue,
                other => return other,
            }
        }
    }

    /// The next non-presence message within `dur`, or None on timeout.
    /// Panics on a close or a broken socket.
    pub async fn recv_json_timeout(&mut self, dur: Duration) -> Option<Value> {
        match self.next_non_presence(dur).await {
            Event::Json(v) => Some(v),
            Event::Timeout => None,
            other => panic!("expected a message, socket gave {other:?}"),
        }
    }

    /// The next non-presence message, within [`WAIT`].
    pub async fn recv_json(&mut self) -> Value {
        self.recv_json_timeout(WAIT)
            .await
            .expect("no message within the deadline")
    }

    /// Reads until the server closes, skipping messages; asserts the code.
    pub async fn expect_close_within(&mut self, code: u16, dur: Duration) {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_event(left).await {
                Event::Json(_) => continue,
                Event::Close(got) => {
                    assert_eq!(got, Some(code), "socket closed with the wrong code");
                    return;
                }
                other => {
                    panic!("expected a close frame with code {code} within {dur:?}, got {other:?}")
                }
            }
        }
    }

    pub async fn expect_close(&mut self, code: u16) {
        self.expect_close_within(code, WAIT).await;
    }

    /// Asserts that nothing but presence traffic arrives for `dur`.
    pub async fn expect_quiet(&mut self, dur: Duration) {
        if let Some(v) = self.recv_json_timeout(dur).await {
            panic!("expected no message, got {v}");
        }
    }

    /// Waits for the ack of op `id` (skipping relayed patches); returns its `v`.
    /// Panics on a reject.
    pub async fn await_ack(&mut self, id: u64) -> u64 {
        loop {
            let m = self.recv_json().await;
            match s(&m["type"]) {
                "ack" if m["id"] == json!(id) => {
                    return m["v"]
                        .as_u64()
                        .unwrap_or_else(|| panic!("ack without a numeric v: {m}"))
                }
                "patch" => continue,
                _ => panic!("waiting for the ack of op {id}, got {m}"),
            }
        }
    }

    /// Sends a patch and waits for its ack; returns the version.
    pub async fn patch_acked(&mut self, id: u64, ops: Vec<Value>) -> u64 {
        self.send_patch(id, ops).await;
        self.await_ack(id).await
    }

    /// Waits for a reject of op `id` (or `null`); returns the message.
    pub async fn await_reject(&mut self, id: Value) -> Value {
        let m = self.recv_json().await;
        assert_eq!(m["type"], "reject", "expected a reject, got {m}");
        assert_eq!(m["id"], id, "reject for the wrong op: {m}");
        assert!(m["message"].is_string(), "reject without a message: {m}");
        m
    }

    /// Collects relayed `patch` messages until version `upto`; returns them
    /// by version. Panics on anything else than a patch.
    pub async fn collect_patches(&mut self, upto: u64) -> BTreeMap<u64, Value> {
        let mut got = BTreeMap::new();
        let mut last = 0;
        while last < upto {
            let m = self.recv_json().await;
            assert_eq!(m["type"], "patch", "expected a relayed patch, got {m}");
            let v = m["v"].as_u64().expect("patch v");
            assert!(v > last, "patch versions must increase: {v} after {last}");
            last = v;
            got.insert(v, m);
        }
        got
    }

    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.ws.close(None)).await;
        // Read until the server's close answer (or a deadline) so the
        // server sees a clean close before anything else happens.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while let Ok(Some(Ok(_))) = tokio::time::timeout_at(deadline, self.ws.next()).await {}
    }
}

/// The person id from a welcome.
pub fn you(welcome: &Value) -> String {
    s(&welcome["you"]).to_string()
}

/// Asserts that a string looks like an id.
pub fn assert_id(v: &Value) {
    let id = s(v);
    assert!(
        !id.is_empty()
            && id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "not an id: {id:?}"
    );
}

impl Client {
    /// Opens the socket of a file with extra headers on the upgrade request.
    pub async fn connect_with(node: &Node, file: &str, headers: &[(&str, &str)]) -> Client {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
        let mut req = node
            .ws_url(file)
            .into_client_request()
            .expect("websocket request");
        for (k, v) in headers {
            req.headers_mut().insert(
                HeaderName::from_bytes(k.as_bytes()).expect("header name"),
                HeaderValue::from_str(v).expect("header value"),
            );
        }
        let (ws, _resp) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(req))
            .await
            .expect("websocket upgrade timed out")
            .expect("websocket upgrade failed");
        Client { ws }
    }

    /// Opens the socket (with extra upgrade headers) and says hello. Returns
    /// the client and its welcome, or what came instead of the welcome (a
    /// close, mostly). Sending the hello may fail when the server already
    /// closed the socket; that is left for the read to report.
    pub async fn try_join_with(
        node: &Node,
        file: &str,
        hello: &Hello,
        headers: &[(&str, &str)],
    ) -> Result<(Client, Value), Event> {
        let mut c = Client::connect_with(node, file, headers).await;
        let _ =
            tokio::time::timeout(WAIT, c.ws.send(Message::text(hello.to_json().to_string()))).await;
        match c.next_non_presence(WAIT).await {
            Event::Json(v) if v["type"] == "welcome" => Ok((c, v)),
            other => Err(other),
        }
    }

    /// [`Client::try_join_with`] without extra headers.
    pub async fn try_join(
        node: &Node,
        file: &str,
        hello: &Hello,
    ) -> Result<(Client, Value), Event> {
        Client::try_join_with(node, file, hello, &[]).await
    }

    /// Joins (with extra upgrade headers), asserting a welcome.
    pub async fn join_with(
        node: &Node,
        file: &str,
        hello: &Hello,
        headers: &[(&str, &str)],
    ) -> (Client, Value) {
        match Client::try_join_with(node, file, hello, headers).await {
            Ok(joined) => joined,
            Err(other) => panic!("expected a welcome, got {other:?}"),
        }
    }

    /// Joins (with extra upgrade headers), asserting that the server closes
    /// the socket with `code` instead of welcoming it.
    pub async fn join_refused_with(
        node: &Node,
        file: &str,
        hello: &Hello,
        headers: &[(&str, &str)],
        code: u16,
    ) {
        match Client::try_join_with(node, file, hello, headers).await {
            Ok((_, w)) => panic!("expected a close with {code}, got a welcome: {w}"),
            Err(Event::Close(got)) => {
                assert_eq!(got, Some(code), "refused with the wrong close code")
            }
            Err(other) => panic!("expected a close with {code}, got {other:?}"),
        }
    }

    /// Joins, retrying while the server refuses with `code`, for up to `dur`
    /// (a slot being freed a moment after a socket closed).
    pub async fn join_when_freed(
        node: &Node,
        file: &str,
        hello: &Hello,
        code: u16,
        dur: Duration,
    ) -> (Client, Value) {
        let deadline = Instant::now() + dur;
        loop {
            match Client::try_join(node, file, hello).await {
                Ok(joined) => return joined,
                Err(Event::Close(Some(got))) if got == code && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(other) => panic!("expected a welcome within {dur:?}, got {other:?}"),
            }
        }
    }

    /// Sends a `presence` message made of `fields` (the type is added).
    pub async fn send_presence(&mut self, fields: Value) {
        let mut msg = fields;
        msg["type"] = json!("presence");
        self.send_json(&msg).await;
    }

    /// The next message of any type (presence traffic included) within
    /// `dur`, or None on timeout. Panics on a close or a broken socket.
    pub async fn recv_any_timeout(&mut self, dur: Duration) -> Option<Value> {
        match self.next_event(dur).await {
            Event::Json(v) => Some(v),
            Event::Timeout => None,
            other => panic!("expected a message, socket gave {other:?}"),
        }
    }

    /// The next message of type `ty` within `dur`, skipping every other
    /// message; None on timeout. Panics on a close or a broken socket.
    pub async fn recv_type(&mut self, ty: &str, dur: Duration) -> Option<Value> {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.recv_any_timeout(left).await?;
            if v["type"] == ty {
                return Some(v);
            }
        }
    }

    /// Every message (presence traffic included) that arrives within `dur`.
    /// Panics on a close or a broken socket.
    pub async fn collect_for(&mut self, dur: Duration) -> Vec<Value> {
        let deadline = Instant::now() + dur;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return got;
            }
            match self.recv_any_timeout(left).await {
                Some(v) => got.push(v),
                None => return got,
            }
        }
    }

    /// Reads until nothing has arrived for `quiet` (at most `max` in all);
    /// returns what came.
    pub async fn drain_until_quiet(&mut self, quiet: Duration, max: Duration) -> Vec<Value> {
        let deadline = Instant::now() + max;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return got;
            }
            match self.recv_any_timeout(quiet.min(left)).await {
                Some(v) => got.push(v),
                None => return got,
            }
        }
    }

    /// The raw text of the next text frame within `dur`, or None on timeout.
    /// Panics on a close or a broken socket.
    pub async fn next_text(&mut self, dur: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + dur;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return None,
                Ok(Some(Ok(Message::Text(t)))) => return Some(t.as_str().to_string()),
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)))) => continue,
                Ok(other) => panic!("expected a text frame, socket gave {other:?}"),
            }
        }
    }
}
