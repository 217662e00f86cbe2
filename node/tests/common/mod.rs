//! Shared helpers for the whole-binary tests of `atrium-node`.
//!
//! Every test starts its own node (its own port, its own data folder) with
//! [`Node::start`], talks HTTP to it through [`http`] and the socket through
//! [`Client`]. Every wait has a deadline, so a broken server fails a test
//! instead of hanging it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

pub use atrium_testkit::process::Proc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
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

pub use atrium_testkit::env::{secret, service_env};

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
    proc: Proc,
    pub port: u16,
    pub data: PathBuf,
    _tmp: Option<tempfile::TempDir>,
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
            // Tests make many files quickly for one account (the ring pickers of
            // the cluster tests, hundreds of boards): the creation rate is raised
            // here, and tests of the rate itself set it back (`envs` win).
            .env("ATRIUM_FILE_CREATES_PER_MINUTE", "1000000")
            // /metrics on an admin address of its own, as deployments have it (on
            // the main address it needs a server admin's token); a test that wants
            // none passes ATRIUM_ADMIN_BIND as "".
            .env("ATRIUM_ADMIN_BIND", "127.0.0.1:0");
        for (k, v) in envs {
            if *k == "ATRIUM_ADMIN_BIND" && v.is_empty() {
                cmd.env_remove(k);
            } else {
                cmd.env(k, v);
            }
        }
        let mut proc = Proc::spawn("atrium-node", cmd);
        let needle = "listening on http://";
        let rest = proc.wait_line(needle, Duration::from_secs(30)).await;
        let port = parse_port(&format!("{needle}{rest}"))
            .unwrap_or_else(|| panic!("no port in {rest:?}:\n{}", proc.log()));
        proc.name = format!("atrium-node (port {port})");
        Node {
            proc,
            port,
            data: data.to_path_buf(),
            _tmp: None,
        }
    }

    /// The port of the node's admin address (`/metrics`), when it has one: the
    /// node prints it right after its main address.
    pub fn admin_port(&self) -> Option<u16> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let log = self.log();
            if let Some(i) = log.find("metrics on http://") {
                let rest = &log[i + "metrics on http://".len()..];
                let hostport: String = rest
                    .chars()
                    .take_while(|c| *c != '/' && !c.is_whitespace())
                    .collect();
                return hostport.rsplit(':').next().and_then(|p| p.parse().ok());
            }
            if log.contains("data in ") || Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    pub fn ws_url(&self, file: &str) -> String {
        format!("ws://127.0.0.1:{}/files/{}/ws", self.port, file)
    }

    pub fn pid(&self) -> i32 {
        self.proc.pid()
    }

    /// Everything the node printed so far.
    pub fn log(&self) -> String {
        self.proc.log()
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        self.proc.kill9();
    }

    pub fn sigterm(&self) {
        self.proc.sigterm();
    }

    /// Waits up to `dur` for the process to exit on its own.
    pub async fn wait_exit(&mut self, dur: Duration) -> Option<ExitStatus> {
        self.proc.wait_exit(dur).await
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

pub use atrium_testkit::http::Resp;

/// Sends one request to the node on a fresh connection and reads the whole answer.
pub async fn http(
    node: &Node,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Resp {
    http_at(node.port, method, path, headers, body).await
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
        self.proc.alive()
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
pub use atrium_testkit::http::request as http_at;

/// The node's `/metrics` text (asserting a 200), from its admin address.
pub async fn metrics_text(node: &Node) -> String {
    let port = node
        .admin_port()
        .expect("the node has no admin address (ATRIUM_ADMIN_BIND was turned off)");
    let r = http_at(port, "GET", "/metrics", &[], None).await;
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

/// The sum of the series of `name` with `labels`, which must be exported: every family
/// the node has is exported from the start (fixed labels at 0), so a missing one means a
/// renamed metric, and a check against 0 must not pass on it.
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metric_sum(text, name, labels)
        .unwrap_or_else(|| panic!("{name}{labels:?} is not exported by the node"))
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
/// (which must be exported); returns the last value. Panics after `dur`.
pub async fn wait_metric(
    node: &Node,
    name: &str,
    labels: &[(&str, &str)],
    want: impl Fn(f64) -> bool,
    dur: Duration,
) -> f64 {
    let deadline = Instant::now() + dur;
    loop {
        let v = metric(&metrics_text(node).await, name, labels);
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

// ---------------------------------------------------------------------------
// Clusters: several node processes sharing a Postgres database and a
// coordinator (NATS or Redis), and clients that find a file's node the way the
// router does and keep a model of the document.
// ---------------------------------------------------------------------------

/// Generates `mod NAME { fn nats(); fn redis() }`, two tests running
/// `NAME(Backend::...)`, so every cluster test runs against both coordinators.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nats() {
                super::$name($crate::common::Backend::Nats).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$name($crate::common::Backend::Redis).await
            }
        }
    )*};
}

/// Which coordinator a cluster uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Nats,
    Redis,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Nats => "nats",
            Backend::Redis => "redis",
        }
    }

    /// The suite's shared server of this kind.
    pub fn shared_url(self) -> String {
        match self {
            Backend::Nats => service_env("ATRIUM_TEST_NATS_URL"),
            Backend::Redis => service_env("ATRIUM_TEST_REDIS_URL"),
        }
    }
}

/// A coordinator URL with a fresh namespace, so parallel tests never meet.
pub fn namespaced(server: &str) -> String {
    let base = server.trim().trim_end_matches('/');
    format!("{base}?namespace=ct{}", &secret()[..20])
}

pub use atrium_testkit::postgres::TestDatabase;

/// One node of a cluster as clients see it.
#[derive(Clone, Debug)]
pub struct Member {
    pub id: String,
    pub port: u16,
    /// Live and taking work: what the router would route to.
    pub up: bool,
}

/// The nodes of a cluster, shared with client tasks: the router's view.
#[derive(Clone, Default)]
pub struct Directory(Arc<Mutex<Vec<Member>>>);

impl Directory {
    pub fn members(&self) -> Vec<Member> {
        self.0.lock().unwrap().clone()
    }

    fn set_up(&self, id: &str, up: bool) {
        for m in self.0.lock().unwrap().iter_mut() {
            if m.id == id {
                m.up = up;
            }
        }
    }

    fn set_port(&self, id: &str, port: u16) {
        for m in self.0.lock().unwrap().iter_mut() {
            if m.id == id {
                m.port = port;
            }
        }
    }

    fn push(&self, member: Member) {
        self.0.lock().unwrap().push(member);
    }

    pub fn port_of(&self, id: &str) -> u16 {
        self.members()
            .into_iter()
            .find(|m| m.id == id)
            .unwrap_or_else(|| panic!("no node {id} in the cluster"))
            .port
    }

    /// The node the consistent hash ring of the up members picks for `file`.
    pub fn owner(&self, file: &str) -> String {
        self.order(file)
            .first()
            .map(|m| m.id.clone())
            .expect("no node is up")
    }

    /// Up members in the order a router tries them for `file`: the ring owner
    /// first.
    pub fn order(&self, file: &str) -> Vec<Member> {
        let members = self.members();
        let up: Vec<atrium_coordinator::NodeId> = members
            .iter()
            .filter(|m| m.up)
            .map(|m| atrium_coordinator::NodeId::parse(&m.id).expect("node id"))
            .collect();
        let ring = atrium_coordinator::Ring::new(up.iter());
        ring.candidates(file)
            .filter_map(|id| members.iter().find(|m| m.id == id.as_str()).cloned())
            .collect()
    }
}

/// Where a file's owner would be with a given set of node ids.
pub fn ring_owner(ids: &[&str], file: &str) -> String {
    let ids: Vec<atrium_coordinator::NodeId> = ids
        .iter()
        .map(|id| atrium_coordinator::NodeId::parse(id).expect("node id"))
        .collect();
    atrium_coordinator::Ring::new(ids.iter())
        .owner(file)
        .expect("empty ring")
        .as_str()
        .to_string()
}

/// Several `atrium-node` processes sharing a database and a coordinator.
/// Fields drop in order: the nodes first, then the database.
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub ids: Vec<String>,
    pub dir: Directory,
    pub coordinator: String,
    pub lease_ms: u64,
    envs: Vec<(String, String)>,
    pub db: TestDatabase,
}

impl Cluster {
    /// `count` nodes (`n0`, `n1`, ...) on the suite's server of `backend`,
    /// with a fresh database and namespace.
    pub async fn start(
        backend: Backend,
        count: usize,
        lease_ms: u64,
        extra: &[(&str, &str)],
    ) -> Cluster {
        Cluster::start_on(&backend.shared_url(), count, lease_ms, extra).await
    }

    /// Like [`Cluster::start`], on a given coordinator server URL.
    pub async fn start_on(
        server: &str,
        count: usize,
        lease_ms: u64,
        extra: &[(&str, &str)],
    ) -> Cluster {
        let db = TestDatabase::create().await;
        let coordinator = namespaced(server);
        let mut envs: Vec<(String, String)> = vec![
            ("ATRIUM_DATABASE_URL".into(), db.url.clone()),
            ("ATRIUM_COORDINATOR".into(), coordinator.clone()),
            ("ATRIUM_LEASE_MS".into(), lease_ms.to_string()),
            ("ATRIUM_DATABASE_POOL".into(), "4".into()),
            ("ATRIUM_WS_PER_IP".into(), "100000".into()),
            ("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND".into(), "0".into()),
            ("ATRIUM_AUTH_PER_IP_PER_MINUTE".into(), "1000".into()),
            ("ATRIUM_ARGON2_MEMORY_KIB".into(), "1024".into()),
            ("ATRIUM_ARGON2_ITERATIONS".into(), "1".into()),
        ];
        for (k, v) in extra {
            envs.retain(|(key, _)| key != k);
            envs.push((k.to_string(), v.to_string()));
        }
        let mut cluster = Cluster {
            nodes: Vec::new(),
            ids: Vec::new(),
            dir: Directory::default(),
            coordinator,
            lease_ms,
            envs,
            db,
        };
        // The first node alone applies the migrations; the rest start together.
        cluster.add_node().await;
        let ids: Vec<String> = (1..count).map(|i| format!("n{i}")).collect();
        let starts = ids.iter().map(|id| cluster.spawn_node(id));
        let started = futures_util::future::join_all(starts).await;
        for (id, node) in ids.into_iter().zip(started) {
            cluster.register(id, node);
        }
        // Every node sees every other before files are opened, so no ring change
        // moves them afterwards.
        for node in &cluster.nodes {
            wait_metric(
                node,
                "atrium_ring_members",
                &[],
                |n| n == count as f64,
                Duration::from_millis(lease_ms * 10),
            )
            .await;
        }
        cluster
    }

    async fn spawn_node(&self, id: &str) -> Node {
        let mut envs: Vec<(&str, &str)> = self
            .envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        envs.push(("ATRIUM_NODE_ID", id));
        Node::start(&envs).await
    }

    fn register(&mut self, id: String, node: Node) {
        if self.dir.members().iter().any(|m| m.id == id) {
            self.dir.set_port(&id, node.port);
        } else {
            self.dir.push(Member {
                id: id.clone(),
                port: node.port,
                up: true,
            });
        }
        self.ids.push(id);
        self.nodes.push(node);
    }

    /// Starts one more node (`n<count>`); returns its index. It is on the
    /// directory's ring from the start, as the nodes learn of it from its
    /// first heartbeat, before its start is reported here (clients sent to
    /// it meanwhile wait).
    pub async fn add_node(&mut self) -> usize {
        let id = format!("n{}", self.nodes.len());
        self.dir.push(Member {
            id: id.clone(),
            port: 0,
            up: true,
        });
        let node = self.spawn_node(&id).await;
        self.register(id, node);
        self.nodes.len() - 1
    }

    pub fn index(&self, id: &str) -> usize {
        self.ids
            .iter()
            .position(|i| i == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    pub fn node(&self, id: &str) -> &Node {
        &self.nodes[self.index(id)]
    }

    /// The up node ids.
    pub fn up_ids(&self) -> Vec<String> {
        self.dir
            .members()
            .into_iter()
            .filter(|m| m.up)
            .map(|m| m.id)
            .collect()
    }

    pub fn kill9(&mut self, id: &str) {
        self.dir.set_up(id, false);
        let i = self.index(id);
        self.nodes[i].kill9();
    }

    /// SIGTERM (the node drains); the directory stops routing to it at once.
    pub fn sigterm(&mut self, id: &str) {
        self.dir.set_up(id, false);
        self.node(id).sigterm();
    }

    /// SIGSTOP: the process freezes (its sockets stay open, unanswered).
    pub fn sigstop(&mut self, id: &str) {
        self.dir.set_up(id, false);
        signal(self.node(id).pid(), libc::SIGSTOP);
    }

    /// SIGCONT after [`Cluster::sigstop`]; the directory is left as it is.
    pub fn sigcont(&mut self, id: &str) {
        signal(self.node(id).pid(), libc::SIGCONT);
    }

    pub fn mark_up(&self, id: &str) {
        self.dir.set_up(id, true);
    }

    /// Everything every node printed, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for (id, node) in self.ids.iter().zip(&self.nodes) {
            out.push_str(&format!(
                "===== {id} (port {}) =====\n{}\n",
                node.port,
                node.log()
            ));
        }
        out
    }

    /// A signed-up account (on some node); returns its token.
    pub async fn account(&self, who: &str) -> String {
        new_account(&self.nodes[0], who).await
    }

    /// Creates files until `count` of them have `node` as their ring owner
    /// among `ring`; returns their ids. Each gets `link` = edit.
    pub async fn files_owned_by(
        &self,
        token: &str,
        node: &str,
        ring: &[&str],
        count: usize,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut made = 0;
        while out.len() < count {
            made += 1;
            assert!(made < 40 * count + 40, "the ring never picks {node}");
            let f = create_file(&self.nodes[0], token, "Cluster board", None).await;
            let id = s(&f["id"]).to_string();
            if ring_owner(ring, &id) == node {
                set_link(&self.nodes[self.index(node)], token, &id, "edit").await;
                out.push((id, s(&f["edit_key"]).to_string()));
            }
        }
        out
    }

    /// Which node holds `file` as the other nodes see it: the node a 409
    /// `moved` names. None when every up node would serve it itself.
    pub async fn holder(&self, token: &str, file: &str) -> Option<String> {
        for m in self.dir.members().into_iter().filter(|m| m.up) {
            let r = http_at(
                m.port,
                "GET",
                &format!("/api/files/{file}"),
                &[("authorization", &bearer(token))],
                None,
            )
            .await;
            if r.status == 409 {
                return Some(moved_to(&r));
            }
        }
        None
    }

    /// `GET /api/files/{id}/doc` the way the router sends it: the ring owner
    /// first, following a 409 `moved`. Returns (node id, version, doc).
    pub async fn doc(&self, token: &str, file: &str) -> (String, u64, Value) {
        let mut port = self.dir.order(file)[0].port;
        let mut at = self.dir.order(file)[0].id.clone();
        for _ in 0..4 {
            let r = http_at(
                port,
                "GET",
                &format!("/api/files/{file}/doc"),
                &[("authorization", &bearer(token))],
                None,
            )
            .await;
            if r.status == 409 {
                at = moved_to(&r);
                port = self.dir.port_of(&at);
                continue;
            }
            r.assert_status(200);
            let v = r.body()["version"].as_u64().expect("numeric version");
            return (at, v, r.body()["doc"].clone());
        }
        panic!("GET /doc of {file} kept being moved");
    }
}

/// The node a 409 `moved` answer names (asserting its shape).
pub fn moved_to(r: &Resp) -> String {
    r.assert_error(409, "moved");
    s(&r.body()["error"]["node"]).to_string()
}

pub fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: a plain syscall on the pid of our own child.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// Like [`http_at`], but None instead of a panic when the node cannot be
/// reached or does not answer within `patience`.
pub async fn try_http_at(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    patience: Duration,
) -> Option<Resp> {
    let asking = atrium_testkit::http::try_request(port, method, path, headers, None);
    tokio::time::timeout(patience, asking).await.ok().flatten()
}

/// Why a connection attempt gave no welcome.
#[derive(Debug)]
pub enum Refusal {
    /// The node closed the socket with this code (None: no code).
    Closed(Option<u16>),
    /// Not reachable, not answering in time, or the stream broke.
    Unreachable(String),
}

/// One attempt: upgrade at `port`, say hello, wait for the welcome.
pub async fn attempt(
    port: u16,
    file: &str,
    hello: &Hello,
    patience: Duration,
) -> Result<(Client, Value), Refusal> {
    let url = format!("ws://127.0.0.1:{port}/files/{file}/ws");
    let ws = match tokio::time::timeout(patience, tokio_tungstenite::connect_async(url)).await {
        Err(_) => return Err(Refusal::Unreachable("upgrade timed out".into())),
        Ok(Err(e)) => return Err(Refusal::Unreachable(e.to_string())),
        Ok(Ok((ws, _))) => ws,
    };
    let mut c = Client { ws };
    let _ = tokio::time::timeout(
        patience,
        c.ws.send(Message::text(hello.to_json().to_string())),
    )
    .await;
    match c.next_non_presence(patience).await {
        Event::Json(v) if v["type"] == "welcome" => Ok((c, v)),
        Event::Json(v) => panic!("expected a welcome or a close after hello, got {v}"),
        Event::Close(code) => Err(Refusal::Closed(code)),
        other => Err(Refusal::Unreachable(format!("{other:?}"))),
    }
}

/// A client of one file that finds the file's node like a router would
/// (ring owner first, on 4009 the next node, with a short backoff), keeps a
/// model of the document from its welcome, the relays and its acks, and
/// resumes after every disconnection, resending what is unconfirmed with the
/// original op ids.
pub struct Peer {
    pub file: String,
    pub hello: Hello,
    pub label: String,
    pub ws: Option<Client>,
    /// The node it is connected to (or was last).
    pub at: Option<String>,
    pub version: u64,
    pub doc: Map<String, Value>,
    next_op: u64,
    pub unacked: BTreeMap<u64, Vec<Value>>,
    /// op id -> version, for every acked patch.
    pub acked: BTreeMap<u64, u64>,
    /// Close codes of welcomed sockets, as the server closed them (0: lost
    /// without a close frame).
    pub closes: Vec<(Instant, u16)>,
    /// Hello refusals: (node, close code).
    pub refusals: Vec<(String, Option<u16>)>,
    /// Every welcome: (when, node).
    pub welcomes: WelcomeLog,
    /// Notice codes received.
    pub notices: Vec<u64>,
    /// Closes and notices as they happen, readable while the peer runs.
    pub met: MetLog,
    welcomed_once: bool,
}

impl Peer {
    /// Records that the welcomed socket ended with `code` (0: no close frame).
    fn closed(&mut self, code: u16) {
        let at = Instant::now();
        self.closes.push((at, code));
        self.met.lock().unwrap().closes.push((at, code));
        self.ws = None;
    }

    pub fn new(file: &str, hello: Hello) -> Peer {
        Peer {
            file: file.to_string(),
            label: hello.client[..8].to_string(),
            hello,
            ws: None,
            at: None,
            version: 0,
            doc: Map::new(),
            next_op: 0,
            unacked: BTreeMap::new(),
            acked: BTreeMap::new(),
            closes: Vec::new(),
            refusals: Vec::new(),
            welcomes: Arc::new(Mutex::new(Vec::new())),
            met: MetLog::default(),
            notices: Vec::new(),
            welcomed_once: false,
        }
    }

    /// The node id of each edit this client got acked, by op id.
    pub fn edit_node(&self, op: u64) -> String {
        format!("e{}-{op}", self.label)
    }

    /// The first welcome after `t`, if any.
    pub fn welcomed_after(&self, t: Instant) -> Option<(Instant, String)> {
        self.welcomes
            .lock()
            .unwrap()
            .iter()
            .find(|(at, _)| *at > t)
            .cloned()
    }

    /// Connects the way a router sends a client: to the file's live lease
    /// holder when there is one, else to the ring owner of the up nodes. The
    /// holder is learnt as a router would not need to: after a 4009, by asking
    /// the refusing node over HTTP (its 409 `moved` names the holder). `first`
    /// is tried before anything else. Retries with a short backoff until
    /// `patience` runs out; panics on a refusal a client must not retry
    /// (4001, 4003, 4004, 4029, ...).
    pub async fn connect(&mut self, dir: &Directory, first: Option<&str>, patience: Duration) {
        let deadline = Instant::now() + patience;
        let mut backoff = Duration::from_millis(50);
        let mut next: Option<String> = first.map(str::to_string);
        loop {
            let target = match next.take() {
                Some(id) => id,
                None => dir.owner(&self.file),
            };
            let port = dir.port_of(&target);
            let mut hello = self.hello.clone();
            hello.since = self.welcomed_once.then_some(self.version);
            let tried = if port == 0 {
                // A node still starting: not reachable yet.
                Err(Refusal::Unreachable("starting".into()))
            } else {
                attempt(port, &self.file, &hello, Duration::from_secs(3)).await
            };
            match tried {
                Ok((c, welcome)) => {
                    self.ws = Some(c);
                    self.at = Some(target.clone());
                    self.welcomed(&welcome);
                    self.welcomes.lock().unwrap().push((Instant::now(), target));
                    self.resend().await;
                    return;
                }
                Err(Refusal::Closed(code)) => {
                    self.refusals.push((target.clone(), code));
                    match code {
                        Some(4009) => {
                            if let Some(holder) = self.ask_holder(port).await {
                                if holder != target {
                                    next = Some(holder);
                                    continue;
                                }
                            }
                        }
                        Some(1011..=1013) | None => {}
                        Some(other) => panic!(
                            "peer {} of {} refused by {target} with close {other}",
                            self.label, self.file
                        ),
                    }
                }
                Err(Refusal::Unreachable(_)) => {}
            }
            assert!(
                Instant::now() < deadline,
                "peer {} found no node serving {} within {patience:?} (refusals: {:?})",
                self.label,
                self.file,
                self.refusals
            );
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(400));
        }
    }

    /// The holder a node names for this file (its 409 `moved`), if any.
    async fn ask_holder(&self, port: u16) -> Option<String> {
        let auth;
        let header = match (&self.hello.token, &self.hello.key) {
            (Some(t), _) => {
                auth = bearer(t);
                ("authorization", auth.as_str())
            }
            (None, Some(k)) => ("x-atrium-key", k.as_str()),
            (None, None) => return None,
        };
        let path = format!("/api/files/{}", self.file);
        let r = try_http_at(port, "GET", &path, &[header], Duration::from_secs(2)).await?;
        if r.status != 409 {
            return None;
        }
        Some(moved_to(&r))
    }

    /// Takes in a welcome: the whole document, or what happened since.
    fn welcomed(&mut self, w: &Value) {
        let version = w["version"].as_u64().expect("welcome version");
        if let Some(resume) = w.get("resume").filter(|r| !r.is_null()) {
            assert!(
                self.welcomed_once,
                "a resume answered a hello without `since`: {w}"
            );
            for entry in resume.as_array().expect("resume is an array") {
                self.take(entry);
            }
            assert_eq!(
                self.version, version,
                "after its resume, peer {} is at {} but the welcome says {version}",
                self.label, self.version
            );
        } else {
            let doc = w["doc"].as_object().expect("welcome without doc or resume");
            assert!(
                version >= self.version,
                "peer {} of {} was at v{} and is welcomed back at v{version}: versions went back",
                self.label,
                self.file,
                self.version
            );
            self.doc = doc.clone();
            self.version = version;
        }
        self.welcomed_once = true;
    }

    /// Applies one relayed patch or ack (in a resume or live).
    fn take(&mut self, m: &Value) {
        match s(&m["type"]) {
            "ack" => {
                let id = m["id"].as_u64().expect("ack id");
                let v = m["v"].as_u64().expect("ack v");
                if let Some(ops) = self.unacked.remove(&id) {
                    if v <= self.version {
                        // Already part of a whole document this client was given.
                    } else {
                        assert_eq!(
                            v,
                            self.version + 1,
                            "peer {} of {}: ack of op {id} at v{v} after v{} (a gap)",
                            self.label,
                            self.file,
                            self.version
                        );
                        apply_ops(&mut self.doc, &ops);
                        self.version = v;
                    }
                    self.acked.insert(id, v);
                } else {
                    // A second ack of a resent patch: it must name a known version.
                    assert!(
                        self.acked.contains_key(&id) && v <= self.version,
                        "peer {} of {}: unexpected ack {m}",
                        self.label,
                        self.file
                    );
                }
            }
            "patch" => {
                let v = m["v"].as_u64().expect("patch v");
                assert_eq!(
                    v,
                    self.version + 1,
                    "peer {} of {}: relayed v{v} after v{} (a gap or a repeat)",
                    self.label,
                    self.file,
                    self.version
                );
                apply_ops(&mut self.doc, m["ops"].as_array().expect("ops"));
                self.version = v;
            }
            "reject" => panic!("peer {} of {} got {m}", self.label, self.file),
            "notice" => {
                let code = m["code"].as_u64().unwrap_or(0);
                self.notices.push(code);
                self.met.lock().unwrap().notices.push(code);
            }
            _ => {}
        }
    }

    /// Resends every unconfirmed patch, in order, with its original op id.
    async fn resend(&mut self) {
        let pending: Vec<(u64, Vec<Value>)> = self
            .unacked
            .iter()
            .map(|(id, ops)| (*id, ops.clone()))
            .collect();
        for (id, ops) in pending {
            if !self.send_raw(patch_msg(id, ops)).await {
                return;
            }
        }
    }

    async fn send_raw(&mut self, msg: Value) -> bool {
        let Some(c) = self.ws.as_mut() else {
            return false;
        };
        let sent = tokio::time::timeout(WAIT, c.ws.send(Message::text(msg.to_string()))).await;
        if !matches!(sent, Ok(Ok(()))) {
            // The read side reports how it ended.
            return false;
        }
        true
    }

    /// Sends a new patch: a node of its own (so acked edits can be found in
    /// the document) and a prop of a shared node (last writer wins).
    pub async fn edit(&mut self) -> u64 {
        self.next_op += 1;
        let id = self.next_op;
        let ops = vec![
            put(&self.edit_node(id), json!({"by": self.label, "n": id})),
            put("shared", json!({"last": format!("{}-{id}", self.label)})),
        ];
        self.unacked.insert(id, ops.clone());
        self.send_raw(patch_msg(id, ops)).await;
        id
    }

    /// Reads for up to `dur`, applying what comes. Returns false when the
    /// socket ended (its close code recorded; the caller reconnects).
    pub async fn pump(&mut self, dur: Duration) -> bool {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(c) = self.ws.as_mut() else {
                return false;
            };
            match c.next_event(left).await {
                Event::Json(m) => self.take(&m),
                Event::Timeout => return true,
                Event::Close(code) => {
                    self.closed(code.unwrap_or(0));
                    return false;
                }
                Event::Ended | Event::Error(_) => {
                    self.closed(0);
                    return false;
                }
            }
        }
    }

    /// Reads (reconnecting when needed) until `cond` holds; panics after
    /// `dur`.
    pub async fn pump_until(
        &mut self,
        dir: &Directory,
        dur: Duration,
        what: &str,
        cond: impl Fn(&Peer) -> bool,
    ) {
        let deadline = Instant::now() + dur;
        while !cond(self) {
            assert!(
                Instant::now() < deadline,
                "peer {} of {}: {what} did not happen within {dur:?} (at {:?}, v{}, {} unacked, closes {:?})",
                self.label,
                self.file,
                self.at,
                self.version,
                self.unacked.len(),
                self.closes.iter().map(|c| c.1).collect::<Vec<_>>()
            );
            if self.ws.is_none() {
                self.connect(
                    dir,
                    None,
                    deadline.saturating_duration_since(Instant::now()),
                )
                .await;
                continue;
            }
            self.pump(Duration::from_millis(50)).await;
        }
    }

    /// Edits every `every` until `stop`, riding through every disconnection;
    /// then waits until every patch it sent is acked.
    pub async fn run(
        mut self,
        dir: Directory,
        every: Duration,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> Peer {
        use std::sync::atomic::Ordering;
        let mut next = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            if self.ws.is_none() {
                self.connect(&dir, None, Duration::from_secs(30)).await;
                continue;
            }
            if Instant::now() >= next {
                self.edit().await;
                next += every;
                if next < Instant::now() {
                    next = Instant::now() + every;
                }
            }
            let wait = next.saturating_duration_since(Instant::now());
            self.pump(wait.min(Duration::from_millis(100))).await;
        }
        self.pump_until(&dir, Duration::from_secs(30), "every patch acked", |p| {
            p.unacked.is_empty()
        })
        .await;
        self
    }
}

/// A peer's welcomes: (when, node), shared with the test.
pub type WelcomeLog = Arc<Mutex<Vec<(Instant, String)>>>;

/// What a peer met so far: closes of its welcomed sockets and notices.
#[derive(Default)]
pub struct Met {
    pub closes: Vec<(Instant, u16)>,
    pub notices: Vec<u64>,
}

/// A peer's [`Met`], shared with the test while it runs.
pub type MetLog = Arc<Mutex<Met>>;

/// Peers editing in the background, each on its own task.
pub struct Crowd {
    pub stop: Arc<std::sync::atomic::AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Peer>>,
    /// (file, label, welcomes) of every peer, in spawn order.
    pub logs: Vec<(String, String, WelcomeLog)>,
    /// What every peer met, in spawn order.
    pub mets: Vec<MetLog>,
}

impl Crowd {
    /// Starts every peer: each connects through `dir` and edits every `every`.
    pub fn spawn(dir: &Directory, peers: Vec<Peer>, every: Duration) -> Crowd {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut tasks = Vec::new();
        let mut logs = Vec::new();
        let mut mets = Vec::new();
        for p in peers {
            logs.push((p.file.clone(), p.label.clone(), p.welcomes.clone()));
            mets.push(p.met.clone());
            tasks.push(tokio::spawn(p.run(dir.clone(), every, stop.clone())));
        }
        Crowd {
            stop,
            tasks,
            logs,
            mets,
        }
    }

    /// Waits until `done` holds for what every peer met; panics after `dur`.
    pub async fn until_every_peer(&self, dur: Duration, what: &str, done: impl Fn(&Met) -> bool) {
        let deadline = Instant::now() + dur;
        loop {
            let missing = self
                .mets
                .iter()
                .filter(|m| !done(&m.lock().unwrap()))
                .count();
            if missing == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{missing} clients did not meet {what} within {dur:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until every peer has been welcomed after `t`; panics after `dur`.
    pub async fn all_welcomed_after(&self, t: Instant, dur: Duration) {
        let deadline = Instant::now() + dur;
        loop {
            let missing: Vec<&str> = self
                .logs
                .iter()
                .filter(|(_, _, w)| !w.lock().unwrap().iter().any(|(at, _)| *at > t))
                .map(|(f, _, _)| f.as_str())
                .collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} clients were not welcomed again within {dur:?}; files: {missing:?}",
                missing.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// For each file, the first welcome of any of its peers after `t`:
    /// (when, node).
    pub fn first_welcome_after(&self, t: Instant) -> BTreeMap<String, (Instant, String)> {
        let mut out: BTreeMap<String, (Instant, String)> = BTreeMap::new();
        for (file, _, w) in &self.logs {
            if let Some(first) = w.lock().unwrap().iter().find(|(at, _)| *at > t).cloned() {
                match out.get(file) {
                    Some(have) if have.0 <= first.0 => {}
                    _ => {
                        out.insert(file.clone(), first);
                    }
                }
            }
        }
        out
    }

    /// The node each peer was last welcomed at.
    pub fn last_nodes(&self) -> Vec<(String, Option<String>)> {
        self.logs
            .iter()
            .map(|(f, _, w)| (f.clone(), w.lock().unwrap().last().map(|x| x.1.clone())))
            .collect()
    }

    /// Stops editing and waits until every peer has every patch acked.
    pub async fn finish(self) -> Vec<Peer> {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut peers = Vec::new();
        for t in self.tasks {
            let p = tokio::time::timeout(Duration::from_secs(60), t)
                .await
                .expect("a client did not finish within 60 s")
                .unwrap_or_else(|e| {
                    std::panic::resume_unwind(e.into_panic());
                });
            peers.push(p);
        }
        peers
    }
}

/// Checks one file after a run: `GET /doc` (through its holder) has exactly
/// the acked patches, each version given once and none skipped, every acked
/// edit in the document, and every client's model equal to it. Returns the
/// holder and the version.
pub async fn verify_file(
    cluster: &Cluster,
    token: &str,
    file: &str,
    peers: &mut [&mut Peer],
) -> (String, u64) {
    let (holder, version, doc) = cluster.doc(token, file).await;
    let mut versions: BTreeMap<u64, (String, u64)> = BTreeMap::new();
    for p in peers.iter() {
        assert!(p.unacked.is_empty(), "peer {} has unacked patches", p.label);
        for (&op, &v) in &p.acked {
            if let Some(other) = versions.insert(v, (p.label.clone(), op)) {
                panic!(
                    "{file}: version {v} was given to op {op} of {} and to op {} of {}",
                    p.label, other.1, other.0
                );
            }
            let node = p.edit_node(op);
            assert_eq!(
                doc.get(&node),
                Some(&json!({"by": p.label, "n": op})),
                "{file}: the acked edit {node} (v{v}) is missing from GET /doc at v{version}"
            );
        }
    }
    let expected: Vec<u64> = (1..=version).collect();
    let got: Vec<u64> = versions.keys().copied().collect();
    assert_eq!(
        got, expected,
        "{file}: the acked versions must be exactly 1..={version}, once each"
    );
    for p in peers.iter_mut() {
        p.pump_until(&cluster.dir, Duration::from_secs(20), "catching up", |p| {
            p.version >= version
        })
        .await;
        assert_eq!(p.version, version, "peer {} went past GET /doc", p.label);
        assert_eq!(
            Value::Object(p.doc.clone()),
            doc,
            "{file}: client {} did not converge to GET /doc",
            p.label
        );
    }
    (holder, version)
}

/// Groups peers by file and verifies each file; returns file -> holder.
pub async fn verify_all(
    cluster: &Cluster,
    token: &str,
    peers: &mut [Peer],
) -> BTreeMap<String, String> {
    let mut files: Vec<String> = peers.iter().map(|p| p.file.clone()).collect();
    files.sort();
    files.dedup();
    let mut holders = BTreeMap::new();
    for f in files {
        let mut mine: Vec<&mut Peer> = peers.iter_mut().filter(|p| p.file == f).collect();
        let (holder, _) = verify_file(cluster, token, &f, &mut mine).await;
        holders.insert(f, holder);
    }
    holders
}
