//! Shared helpers for the whole-binary tests of `atrium-node`.
//!
//! Every test starts its own node (its own port, its own data folder) with
//! [`Node::start`], talks HTTP to it through [`http`] and the socket through
//! [`Client`]. Every wait has a deadline, so a broken server fails a test
//! instead of hanging it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper_util::rt::TokioIo;
use serde_json::{json, Map, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The default deadline for one expected message or answer.
pub const WAIT: Duration = Duration::from_secs(10);

/// A password that satisfies the sign-up rules.
pub const PASSWORD: &str = "correct horse battery staple";

// ---------------------------------------------------------------------------
// Random secrets
// ---------------------------------------------------------------------------

/// 128 random bits as 32 lowercase hex characters (a valid id, too).
pub fn secret() -> String {
    let mut buf = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("read /dev/urandom");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// An email address no other test uses.
pub fn unique_email(who: &str) -> String {
    format!("{who}-{}@example.test", &secret()[..12])
}

// ---------------------------------------------------------------------------
// The node process
// ---------------------------------------------------------------------------

/// A running `atrium-node` child process. Killed (SIGKILL) when dropped; when
/// the test is failing, its output is printed so the failure can be read.
pub struct Node {
    child: Child,
    pub port: u16,
    pub data: PathBuf,
    log: Arc<Mutex<String>>,
    _tmp: Option<tempfile::TempDir>,
    exited: Option<ExitStatus>,
}

impl Node {
    /// Starts a node with a fresh temporary data folder.
    pub async fn start(envs: &[(&str, &str)]) -> Node {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut node = Node::start_in(tmp.path(), envs).await;
        node._tmp = Some(tmp);
        node
    }

    /// Starts a node on an existing data folder (the caller keeps it alive),
    /// e.g. to restart on the folder of a node that was killed.
    pub async fn start_in(data: &Path, envs: &[(&str, &str)]) -> Node {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_atrium-node"));
        cmd.arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--data")
            .arg(data)
            .env(
                "ATRIUM_LOG",
                std::env::var("ATRIUM_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn atrium-node");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel::<u16>();

        let stdout = child.stdout.take().expect("stdout");
        let out_log = log.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            let mut sent = false;
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line).into_owned();
                out_log.lock().unwrap().push_str(&text);
                if !sent {
                    if let Some(port) = parse_port(&text) {
                        sent = true;
                        let _ = tx.send(port);
                    }
                }
            }
        });
        let stderr = child.stderr.take().expect("stderr");
        let err_log = log.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line).into_owned();
                err_log.lock().unwrap().push_str(&text);
            }
        });

        let deadline = Instant::now() + Duration::from_secs(30);
        let port = loop {
            match rx.try_recv() {
                Ok(port) => break port,
                Err(mpsc::TryRecvError::Disconnected) | Err(mpsc::TryRecvError::Empty)
                    if Instant::now() > deadline =>
                {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "atrium-node did not print `listening on http://...` within 30 s; output:\n{}",
                        log.lock().unwrap()
                    );
                }
                Err(_) => {}
            }
            if let Ok(Some(status)) = child.try_wait() {
                // Give the reader threads a moment to collect the last lines.
                tokio::time::sleep(Duration::from_millis(100)).await;
                panic!(
                    "atrium-node exited ({status}) before listening; output:\n{}",
                    log.lock().unwrap()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        Node {
            child,
            port,
            data: data.to_path_buf(),
            log,
            _tmp: None,
            exited: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    pub fn ws_url(&self, file: &str) -> String {
        format!("ws://127.0.0.1:{}/files/{}/ws", self.port, file)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Everything the node printed so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            self.exited = self.child.wait().ok();
        }
    }

    pub fn sigterm(&self) {
        // SAFETY: plain syscall on the pid of our own child.
        let rc = unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        assert_eq!(rc, 0, "kill(SIGTERM) failed");
    }

    /// Waits up to `dur` for the process to exit on its own.
    pub async fn wait_exit(&mut self, dur: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + dur;
        loop {
            if let Some(status) = self.exited {
                return Some(status);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exited = Some(status);
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!(
                "----- atrium-node output (port {}) -----\n{}\n----- end of node output -----",
                self.port,
                self.log()
            );
        }
    }
}

fn parse_port(line: &str) -> Option<u16> {
    let rest = &line[line.find("listening on http://")? + "listening on http://".len()..];
    let hostport: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']'))
        .collect();
    hostport.rsplit(':').next()?.parse().ok()
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

/// One HTTP answer.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
    pub text: String,
}

impl Resp {
    /// The JSON body, or a panic naming what came instead.
    pub fn body(&self) -> &Value {
        self.json
            .as_ref()
            .unwrap_or_else(|| panic!("expected a JSON body, got {:?}", self.text))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("header is text").to_string())
    }

    /// Asserts the status and the `{"error":{"code","message"}}` body.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(
            self.status, status,
            "expected {status} {code}, got {} {}",
            self.status, self.text
        );
        let body = self.body();
        let err = body
            .get("error")
            .unwrap_or_else(|| panic!("error body lacks `error`: {}", self.text));
        assert_eq!(err["code"], json!(code), "error code in {}", self.text);
        assert!(
            err["message"].as_str().is_some_and(|m| !m.is_empty()),
            "error message must be a non-empty string: {}",
            self.text
        );
    }

    pub fn assert_status(&self, status: u16) {
        assert_eq!(
            self.status, status,
            "expected status {status}, got {} {}",
            self.status, self.text
        );
    }
}

/// Sends one request on a fresh connection and reads the whole answer.
pub async fn http(
    node: &Node,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    let port = node.port;
    let fut = async move {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect to node");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("http handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", format!("127.0.0.1:{port}"));
        let has_type = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        if body.is_some() && !has_type {
            builder = builder.header("content-type", "application/json");
        }
        let req = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .expect("build request");
        let resp = sender.send_request(req).await.expect("send request");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .expect("read body")
            .to_bytes();
        Resp {
            status,
            headers,
            json: serde_json::from_slice(&bytes).ok(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    };
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{method} {path} got no answer within 30 s"))
}

pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// GET with an optional session token.
pub async fn get(node: &Node, path: &str, token: Option<&str>) -> Resp {
    match token {
        Some(t) => http(node, "GET", path, &[("authorization", &bearer(t))], None).await,
        None => http(node, "GET", path, &[], None).await,
    }
}

/// GET with a link key (and no token).
pub async fn get_with_key(node: &Node, path: &str, key: &str) -> Resp {
    http(node, "GET", path, &[("x-atrium-key", key)], None).await
}

/// A request with a JSON body and an optional session token.
pub async fn send_json(
    node: &Node,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> Resp {
    let raw = body.to_string().into_bytes();
    match token {
        Some(t) => {
            http(
                node,
                method,
                path,
                &[("authorization", &bearer(t))],
                Some(raw),
            )
            .await
        }
        None => http(node, method, path, &[], Some(raw)).await,
    }
}

/// A request without a body and an optional session token.
pub async fn send_empty(node: &Node, method: &str, path: &str, token: Option<&str>) -> Resp {
    match token {
        Some(t) => http(node, method, path, &[("authorization", &bearer(t))], None).await,
        None => http(node, method, path, &[], None).await,
    }
}

/// Signs up a new account; returns (token, account).
pub async fn signup(node: &Node, email: &str) -> (String, Value) {
    let r = send_json(
        node,
        "POST",
        "/api/signup",
        None,
        &json!({"email": email, "password": PASSWORD, "name": "Test Person"}),
    )
    .await;
    r.assert_status(201);
    let token = r.body()["token"]
        .as_str()
        .unwrap_or_else(|| panic!("sign-up answer lacks a token: {}", r.text))
        .to_string();
    (token, r.body()["account"].clone())
}

/// Signs up an account with a unique email; returns its token.
pub async fn new_account(node: &Node, who: &str) -> String {
    signup(node, &unique_email(who)).await.0
}

/// Creates a file; returns the creation answer (id, name, link, keys, version).
pub async fn create_file(node: &Node, token: &str, name: &str, doc: Option<Value>) -> Value {
    let mut body = json!({ "name": name });
    if let Some(doc) = doc {
        body["doc"] = doc;
    }
    let r = send_json(node, "POST", "/api/files", Some(token), &body).await;
    r.assert_status(201);
    r.body().clone()
}

/// Sets a file's `link` setting as its owner.
pub async fn set_link(node: &Node, token: &str, file: &str, link: &str) {
    let r = send_json(
        node,
        "PATCH",
        &format!("/api/files/{file}"),
        Some(token),
        &json!({ "link": link }),
    )
    .await;
    r.assert_status(200);
    assert_eq!(r.body()["link"], json!(link), "PATCH answer: {}", r.text);
}

/// `GET /api/files/{id}/doc` as the owner: (version, doc).
pub async fn get_doc(node: &Node, token: &str, file: &str) -> (u64, Value) {
    let r = get(node, &format!("/api/files/{file}/doc"), Some(token)).await;
    r.assert_status(200);
    let v = r.body()["version"]
        .as_u64()
        .unwrap_or_else(|| panic!("doc answer lacks a numeric version: {}", r.text));
    (v, r.body()["doc"].clone())
}

pub fn s(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v}"))
}

// ---------------------------------------------------------------------------
// A reference model of the document, to know what the server should hold.
// ---------------------------------------------------------------------------

pub fn apply_ops(doc: &mut Map<String, Value>, ops: &[Value]) {
    for op in ops {
        let id = s(&op["id"]).to_string();
        match s(&op["op"]) {
            "put" => {
                doc.insert(id, op["props"].clone());
            }
            "set" => {
                if let Some(Value::Object(node)) = doc.get_mut(&id) {
                    for (k, v) in op["props"].as_object().expect("props") {
                        if v.is_null() {
                            node.remove(k);
                        } else {
                            node.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            "delete" => {
                doc.remove(&id);
            }
            other => panic!("unknown op {other}"),
        }
    }
}

pub fn put(id: &str, props: Value) -> Value {
    json!({"op": "put", "id": id, "props": props})
}

pub fn set(id: &str, props: Value) -> Value {
    json!({"op": "set", "id": id, "props": props})
}

pub fn delete(id: &str) -> Value {
    json!({"op": "delete", "id": id})
}

pub fn patch_msg(id: u64, ops: Vec<Value>) -> Value {
    json!({"type": "patch", "id": id, "ops": ops})
}

// ---------------------------------------------------------------------------
// The socket
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// More helpers (presence, limits, deadlines, health and metrics, drops)
// ---------------------------------------------------------------------------

impl Node {
    /// Whether the node process is still running.
    pub fn alive(&mut self) -> bool {
        if self.exited.is_some() {
            return false;
        }
        match self.child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                self.exited = Some(status);
                false
            }
            Err(_) => false,
        }
    }

    /// Waits until the node's output contains `needle`; returns the output.
    pub async fn wait_log(&self, needle: &str, dur: Duration) -> String {
        let deadline = Instant::now() + dur;
        loop {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "the node did not print {needle:?} within {dur:?}; output:\n{log}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Like [`http`], to any port of 127.0.0.1 (an admin address, say).
pub async fn http_at(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    let fut = async move {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect to node");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("http handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", format!("127.0.0.1:{port}"));
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        let req = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .expect("build request");
        let resp = sender.send_request(req).await.expect("send request");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .expect("read body")
            .to_bytes();
        Resp {
            status,
            headers,
            json: serde_json::from_slice(&bytes).ok(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    };
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .unwrap_or_else(|_| panic!("{method} {path} on port {port} got no answer within 30 s"))
}

/// The node's `/metrics` text (asserting a 200).
pub async fn metrics_text(node: &Node) -> String {
    let r = get(node, "/metrics", None).await;
    r.assert_status(200);
    r.text
}

/// The sum of every series of metric `name` whose labels include all of
/// `labels`; None when no such series is in `text`.
pub fn metric_sum(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let Some((series, value)) = line.trim().rsplit_once(' ') else {
            continue;
        };
        let (series_name, series_labels) = match series.find('{') {
            Some(i) => (&series[..i], &series[i..]),
            None => (series, ""),
        };
        if series_name != name {
            continue;
        }
        if !labels
            .iter()
            .all(|(k, v)| series_labels.contains(&format!("{k}=\"{v}\"")))
        {
            continue;
        }
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("metric line with a bad value: {line}"));
        found = Some(found.unwrap_or(0.0) + v);
    }
    found
}

/// Whether `text` has a series named `name` (with or without labels).
pub fn has_metric(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        !l.starts_with('#')
            && l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
    })
}

/// Polls `/metrics` until `want` holds for the sum of the matching series
/// (missing counts as 0); returns the last value. Panics after `dur`.
pub async fn wait_metric(
    node: &Node,
    name: &str,
    labels: &[(&str, &str)],
    want: impl Fn(f64) -> bool,
    dur: Duration,
) -> f64 {
    let deadline = Instant::now() + dur;
    loop {
        let v = metric_sum(&metrics_text(node).await, name, labels).unwrap_or(0.0);
        if want(v) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{name}{labels:?} stayed at {v} for {dur:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::time::timeout(WAIT, TcpStream::connect(("127.0.0.1", node.port)))
            .await
            .expect("connect timed out")
            .expect("connect to node");
        let req = format!(
            "GET /files/{file}/ws HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n",
            node.port
        );
        stream
            .write_all(req.as_bytes())
            .await
            .expect("send upgrade");
        let mut buf = Vec::new();
        let deadline = tokio::time::Instant::now() + WAIT;
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
                .await
                .expect("upgrade answer timed out")
                .expect("read upgrade answer");
            assert!(n > 0, "connection closed during the upgrade");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        assert!(
            head.starts_with("HTTP/1.1 101"),
            "expected 101 Switching Protocols, got {head}"
        );
        buf.drain(..end);
        RawWs { stream, buf }
    }

    /// Sends one masked text frame.
    pub async fn send_text(&mut self, text: &str) {
        use tokio::io::AsyncWriteExt;
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        let len = payload.len();
        if len < 126 {
            frame.push(0x80 | len as u8);
        } else if len <= 0xffff {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(len as u64).to_be_bytes());
        }
        let mask = [0x37u8, 0xfa, 0x21, 0x3d];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
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
