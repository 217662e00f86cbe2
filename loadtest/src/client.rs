//! One simulated person: a socket that says hello, then edits (editors) and moves a cursor on
//! fixed schedules, and records what comes back.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use atrium_protocol::CloseCode;
use futures_util::{SinkExt, StreamExt};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{timeout, Instant};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode as WsCloseCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{client_async_with_config, MaybeTlsStream, WebSocketStream};

use crate::measure::{add, Measures};
use crate::schedule::{self, Schedule};
use crate::setup::{page_id, random_id, ClientPlan};

/// One presence message in this many is parsed for latency; all are counted.
pub const PRESENCE_SAMPLE: u64 = 10;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes a socket reads at a time. tungstenite's default (128 KiB) is zeroed again before every
/// read: with thousands of small messages a second that memset was a visible part of the
/// generator's CPU, and the buffers its memory. The node's messages are a few KB at most;
/// larger ones are still read whole, in more reads.
pub const READ_BUFFER: usize = 16 * 1024;

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_BUFFER)
}

/// How the run tells clients to end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    Running,
    /// Stop sending, keep reading (answers to what was sent still count).
    Quiet,
    /// Close the socket with a close handshake.
    Close,
    /// Drop the connection with no close handshake.
    Drop,
}

/// What one client needs.
pub struct Client {
    pub plan: ClientPlan,
    pub ws_url: String,
    pub key: String,
    pub token: Option<String>,
    pub edit_rate: f64,
    pub presence_rate: f64,
    pub measures: Arc<Measures>,
    pub end: watch::Receiver<End>,
    /// Cluster mode: keep a model of the document, mark every patch, and reconnect and resume
    /// when the server closes the socket.
    pub track: bool,
    /// Come back after a first join that was told to (1013 with its hint, 4009, 1012), as
    /// a real client does: on in cluster mode and in a `--storm`.
    pub comes_back: bool,
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Versions a client has seen; a gap is a dropped patch.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Versions {
    pub last: u64,
}

impl Versions {
    /// Notes version `v`; returns (versions skipped, whether it came out of order).
    pub fn see(&mut self, v: u64) -> (u64, bool) {
        if v <= self.last {
            return (0, true);
        }
        let gap = v - self.last - 1;
        self.last = v;
        (gap, false)
    }
}

/// What one connection knows and schedules, from its welcome to its end.
struct Connection {
    /// Our person id in the file.
    me: String,
    asked_edit: bool,
    /// Whether we hold an editor seat now.
    editing: bool,
    versions: Versions,
    /// Where in its period this client's presence falls.
    phase: f64,
    presence: Option<Schedule>,
    patches: Option<Schedule>,
    /// Cursor moves sent.
    step: u64,
    presence_seen: u64,
}

#[derive(Deserialize)]
struct Welcome {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    you: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    version: u64,
    #[serde(default)]
    presence_hz: Option<f64>,
}

/// The fields of the messages the client looks into.
#[derive(Deserialize)]
struct Incoming {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    v: Option<u64>,
    #[serde(default)]
    t: Option<f64>,
    #[serde(default)]
    by: Option<String>,
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    hz: Option<f64>,
}

#[derive(Deserialize)]
struct Presences {
    people: Vec<PresenceEntry>,
}

#[derive(Deserialize)]
struct PresenceEntry {
    #[serde(default)]
    cursor: Option<IgnoredAny>,
    #[serde(default)]
    t: Option<f64>,
}

/// The message type when the message starts with it (the node writes patches, acks and
/// presences that way), without parsing the rest.
pub fn leading_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"type\":\"")?;
    rest.split_once('"').map(|(t, _)| t)
}

/// A cursor moving on a circle, a little further each step.
pub fn cursor_at(index: usize, step: u64) -> (f64, f64) {
    let angle = (step as f64) * 0.05 + index as f64;
    let x = 400.0 + 300.0 * angle.cos();
    let y = 300.0 + 200.0 * angle.sin();
    ((x * 10.0).round() / 10.0, (y * 10.0).round() / 10.0)
}

/// What a client keeps across its connections: the op ids it used, its unconfirmed patches, and
/// (in tracking mode) its model of the document.
#[derive(Default)]
struct State {
    op_id: u64,
    acked_count: u64,
    /// Tracking mode: sent, not yet acked, by op id: the ops as sent (resent on reconnect).
    pending: BTreeMap<u64, String>,
    /// Tracking mode: every acked op id.
    acked: Vec<u64>,
    /// Tracking mode: the document as this client knows it, and its version.
    doc: Map<String, Value>,
    version: u64,
}

impl State {
    /// An ack for one of our patches: confirmed; its ops enter the model at `v` unless the model
    /// already holds that version (a resent patch the welcome's document already had).
    fn ack(&mut self, id: u64, v: Option<u64>) {
        if let Some(ops) = self.pending.remove(&id) {
            self.acked.push(id);
            if let Some(v) = v.filter(|v| *v > self.version) {
                if let Ok(ops) = serde_json::from_str::<Value>(&ops) {
                    apply_ops(&mut self.doc, &ops);
                }
                self.version = v;
            }
        }
    }

    /// Someone else's patch at `v`, applied in version order.
    fn patch(&mut self, v: Option<u64>, ops: Option<&Value>) {
        if let (Some(v), Some(ops)) = (v, ops) {
            if v > self.version {
                apply_ops(&mut self.doc, ops);
                self.version = v;
            }
        }
    }

    /// A welcome: the whole document, or what happened since our version.
    fn welcome(&mut self, w: &Value) {
        if let Some(doc) = w.get("doc") {
            self.doc = doc.as_object().cloned().unwrap_or_default();
            self.version = w["version"].as_u64().unwrap_or(0);
        } else if let Some(resume) = w.get("resume").and_then(Value::as_array) {
            for entry in resume {
                match entry["type"].as_str() {
                    Some("ack") => self.ack(entry["id"].as_u64().unwrap_or(0), entry["v"].as_u64()),
                    Some("patch") => self.patch(entry["v"].as_u64(), entry.get("ops")),
                    _ => {}
                }
            }
            self.version = self.version.max(w["version"].as_u64().unwrap_or(0));
        }
    }
}

/// Applies a patch's ops to a document (the protocol's put, set and delete).
pub fn apply_ops(doc: &mut Map<String, Value>, ops: &Value) {
    for op in ops.as_array().map(Vec::as_slice).unwrap_or_default() {
        let Some(id) = op["id"].as_str() else {
            continue;
        };
        match op["op"].as_str() {
            Some("put") => {
                doc.insert(id.to_string(), op["props"].clone());
            }
            Some("set") => {
                if let (Some(Value::Object(node)), Some(props)) =
                    (doc.get_mut(id), op["props"].as_object())
                {
                    for (k, v) in props {
                        if v.is_null() {
                            node.remove(k);
                        } else {
                            node.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            Some("delete") => {
                doc.remove(id);
            }
            _ => {}
        }
    }
}

/// The prop a tracked patch sets on its rectangle, unique per (client, op id): the final
/// document holds every acked patch's mark.
pub fn mark(index: usize, op_id: u64) -> String {
    format!("c{index}_{op_id}")
}

/// What a client hands back at the end.
#[derive(Debug, Default)]
pub struct ClientEnd {
    pub index: usize,
    pub file: usize,
    pub rect: String,
    /// Tracking mode: the client's document and version (None: it never joined).
    pub doc: Option<(u64, Map<String, Value>)>,
    pub acked: Vec<u64>,
    /// Whether its socket was open when the run ended.
    pub connected_at_end: bool,
}

/// How one connection ended.
enum Ended {
    /// The run ended it (close or drop).
    Run(End),
    /// The server closed it or it was lost.
    Lost,
}

impl Client {
    fn count_close(&self, code: &str) {
        Measures::count(&self.measures.unexpected_closes, code);
    }

    fn run_going(&self) -> bool {
        matches!(*self.end.borrow(), End::Running | End::Quiet)
    }

    /// Runs the client until the run ends, or the server closes it (in tracking mode it then
    /// reconnects with backoff and resumes from its version, resending unconfirmed patches
    /// with their original ids).
    pub async fn run(mut self) -> ClientEnd {
        let m = self.measures.clone();
        let client_id = random_id(24);
        let mut st = State::default();
        let mut first = true;
        let mut backoff = Duration::from_millis(50);
        let mut connected_at_end = false;
        loop {
            let since = (!first && self.track).then_some(st.version);
            let (mut ws, welcome, full) = match self.join(&client_id, since).await {
                Ok(joined) => joined,
                Err(JoinFailed {
                    code,
                    retry: hint,
                    reset,
                }) => {
                    if reset {
                        add(&m.counters.handshake_resets, 1);
                    }
                    // Tracking clients behave as the contract asks of a real one: a close they can
                    // act on by coming back (4009 while rooms settle, 1012, 1013, a lost
                    // connection) is retried with backoff, the first join included, or after
                    // the node's `retry-ms` hint when it gave one.
                    let retry = (self.track || (first && self.comes_back))
                        && self.run_going()
                        && code.is_none_or(retryable);
                    if let Some(code) = code {
                        self.count_close(&code.to_string());
                    }
                    if !retry {
                        if first {
                            add(&m.counters.connection_errors, 1);
                        }
                        break;
                    }
                    if first {
                        add(&m.counters.join_retries, 1);
                    } else {
                        add(&m.counters.reconnect_failures, 1);
                    }
                    let jitter = rand::random_range(0..=backoff.as_millis() as u64 / 2);
                    let wait = hint.unwrap_or(backoff + Duration::from_millis(jitter));
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            if first {
                add(&m.counters.connected, 1);
            } else {
                add(&m.counters.reconnects, 1);
                m.counters
                    .last_rejoin_us
                    .fetch_max(m.elapsed().as_micros() as u64, Ordering::Relaxed);
            }
            first = false;
            backoff = Duration::from_millis(50);
            add(&m.counters.open, 1);
            if let Some(full) = &full {
                st.welcome(full);
            }
            let ended = self.session(&mut ws, welcome, &mut st).await;
            m.counters.open.fetch_sub(1, Ordering::Relaxed);
            match ended {
                Ended::Run(End::Close) => {
                    let unacked = if self.track {
                        st.pending.len() as u64
                    } else {
                        st.op_id.saturating_sub(st.acked_count)
                    };
                    add(&m.counters.unacked_patches, unacked);
                    connected_at_end = true;
                    close(ws).await;
                    break;
                }
                // Dropping `ws` closes the connection at once.
                Ended::Run(_) => {
                    connected_at_end = true;
                    break;
                }
                Ended::Lost if self.track && self.run_going() => {
                    let jitter = rand::random_range(0..=25);
                    tokio::time::sleep(Duration::from_millis(jitter)).await;
                }
                Ended::Lost => break,
            }
        }
        ClientEnd {
            index: self.plan.index,
            file: self.plan.file,
            rect: self.plan.rect.clone(),
            doc: (self.track && !first).then(|| (st.version, std::mem::take(&mut st.doc))),
            acked: std::mem::take(&mut st.acked),
            connected_at_end,
        }
    }

    /// One connection, from its welcome until the run or the server ends it.
    async fn session(&mut self, ws: &mut Socket, welcome: Welcome, st: &mut State) -> Ended {
        let m = self.measures.clone();
        let mut c = self.connection(welcome);
        // Unconfirmed patches go again, with their original ids (the node acks one it already
        // has without applying it twice).
        if c.editing {
            for (id, ops) in &st.pending {
                let msg = format!(r#"{{"type":"patch","id":{id},"ops":{ops}}}"#);
                if ws.send(Message::Text(msg.into())).await.is_ok() {
                    add(&m.counters.resent_patches, 1);
                    add(&m.counters.messages_sent, 1);
                }
            }
        }
        let mut sending = true;
        let origin = Instant::from_std(m.origin());
        let never = origin + Duration::from_secs(86_400 * 365);
        let due = |s: &Option<Schedule>, on: bool| match s {
            Some(s) if on => origin + s.due(),
            _ => never,
        };

        // One timer for both schedules, moved only when the next send time changes, and one
        // wait for the end signal, renewed only when it fires: making new ones on every message
        // received put the timer wheel high in the generator's own profile.
        let mut armed = never;
        let timer = tokio::time::sleep_until(armed);
        tokio::pin!(timer);
        let mut end_wait = Box::pin(next_end(self.end.clone()));
        loop {
            let (presence_due, patch_due) = (
                due(&c.presence, sending),
                due(&c.patches, c.editing && sending),
            );
            let next = presence_due.min(patch_due);
            if next != armed {
                timer.as_mut().reset(next);
                armed = next;
            }
            tokio::select! {
                biased;
                (rx, changed) = &mut end_wait => {
                    let now_end = *rx.borrow();
                    end_wait = Box::pin(next_end(rx));
                    match now_end {
                        _ if !changed => return Ended::Run(End::Close),
                        End::Running => {}
                        End::Quiet => sending = false,
                        End::Close | End::Drop => return Ended::Run(now_end),
                    }
                }
                frame = ws.next() => {
                    match frame {
                        Some(Ok(Message::Text(text))) => self.received(&mut c, text.as_str(), st),
                        Some(Ok(Message::Close(close))) => {
                            let code = close.map_or(1005, |c| u16::from(c.code));
                            self.count_close(&code.to_string());
                            // Answer the close at once, as browsers do (the reply is queued;
                            // flushing sends it), so the node is not left waiting for it.
                            let _ = ws.flush().await;
                            return Ended::Lost;
                        }
                        Some(Ok(_)) => {}
                        Some(Err(_)) | None => {
                            if self.run_going() {
                                self.count_close("1006");
                            }
                            return Ended::Lost;
                        }
                    }
                }
                _ = &mut timer => {
                    // Fired: re-arm on the next turn even if nothing below moves a schedule.
                    armed = never;
                    let fired = Instant::now();
                    if presence_due <= fired {
                        self.send_presence(&mut c, ws).await;
                    }
                    if patch_due <= fired {
                        self.send_patch(&mut c, ws, st).await;
                    }
                }
            }
        }
    }

    /// A connection's own state, from its welcome.
    fn connection(&self, welcome: Welcome) -> Connection {
        let m = &self.measures;
        let asked_edit = self.plan.editor;
        let editing = asked_edit && welcome.role == "editor";
        if asked_edit && !editing {
            add(&m.counters.joined_as_viewer, 1);
        }
        let phase = schedule::phase(self.plan.index, 0.0);
        let now = m.elapsed();
        let presence_hz = schedule::presence_rate(self.presence_rate, welcome.presence_hz);
        Connection {
            me: welcome.you,
            asked_edit,
            editing,
            versions: Versions {
                last: welcome.version,
            },
            phase,
            presence: Schedule::new(now, presence_hz, phase),
            patches: Schedule::new(now, self.edit_rate, schedule::phase(self.plan.index, 0.5)),
            step: 0,
            presence_seen: 0,
        }
    }

    /// One text message from the node: counted, timed, and (tracking) applied.
    fn received(&self, c: &mut Connection, text: &str, st: &mut State) {
        let m = &self.measures;
        add(&m.counters.messages_received, 1);
        add(&m.counters.bytes_received, text.len() as u64);
        if leading_type(text) == Some("presences") {
            add(&m.counters.presence_received, 1);
            c.presence_seen += 1;
            if c.presence_seen % PRESENCE_SAMPLE == 0 {
                record_presences(m, text);
            }
            return;
        }
        let Ok(msg) = serde_json::from_str::<Incoming>(text) else {
            return;
        };
        match msg.kind.as_str() {
            "ack" | "patch" => self.received_patch(c, &msg, text, st),
            "presence" => add(&m.counters.presence_received, 1),
            "presence-rate" => {
                if let Some(hz) = msg.hz {
                    let presence_hz = schedule::presence_rate(self.presence_rate, Some(hz));
                    c.presence = Schedule::new(m.elapsed(), presence_hz, c.phase);
                }
            }
            "role" => {
                let mine = msg.id.as_ref().and_then(|v| v.as_str()) == Some(c.me.as_str());
                if mine && c.asked_edit {
                    c.editing = msg.role.as_deref() == Some("editor");
                }
            }
            "reject" => {
                add(&m.counters.rejected, 1);
                let code = msg.code.as_ref().and_then(|c| c.as_str()).unwrap_or("?");
                Measures::count(&m.rejects, code);
                // A rejected patch will never be acked.
                if let Some(id) = msg.id.as_ref().and_then(Value::as_u64) {
                    st.pending.remove(&id);
                }
            }
            "notice" => {
                let code = msg.code.map(|c| c.to_string()).unwrap_or_default();
                if code == "429" {
                    add(&m.counters.rate_limited, 1);
                }
                Measures::count(&m.notices, &code);
            }
            _ => {}
        }
    }

    /// An ack of one of ours, or someone else's patch: versions checked, latency recorded.
    fn received_patch(&self, c: &mut Connection, msg: &Incoming, text: &str, st: &mut State) {
        let m = &self.measures;
        if let Some(v) = msg.v {
            let (gap, out_of_order) = c.versions.see(v);
            add(&m.counters.dropped_patches, gap);
            add(&m.counters.out_of_order, u64::from(out_of_order));
        }
        if msg.kind == "ack" {
            add(&m.counters.acks_received, 1);
            st.acked_count += 1;
            if let Some(t) = msg.t {
                m.record_since(&m.ack, t);
            }
            if self.track {
                let id = msg.id.as_ref().and_then(Value::as_u64).unwrap_or(0);
                st.ack(id, msg.v);
            }
        } else if msg.by.as_deref() != Some(c.me.as_str()) {
            add(&m.counters.patches_received, 1);
            if let Some(t) = msg.t {
                m.record_since(&m.relay, t);
            }
            if self.track {
                if let Ok(full) = serde_json::from_str::<Value>(text) {
                    st.patch(msg.v, full.get("ops"));
                }
            }
        }
    }

    /// The next cursor move of the presence schedule.
    async fn send_presence(&self, c: &mut Connection, ws: &mut Socket) {
        let m = &self.measures;
        let Some(s) = c.presence.as_mut() else { return };
        add(&m.counters.sends_skipped, s.advance(m.elapsed()));
        c.step += 1;
        let (x, y) = cursor_at(self.plan.index, c.step);
        let msg = format!(
            r#"{{"type":"presence","page":"{}","cursor":[{x},{y}],"t":{}}}"#,
            page_id(self.plan.page),
            m.now_ms()
        );
        if ws.send(Message::Text(msg.into())).await.is_ok() {
            add(&m.counters.presence_sent, 1);
            add(&m.counters.messages_sent, 1);
        }
    }

    /// The next patch of the edit schedule: a move of this client's rectangle.
    async fn send_patch(&self, c: &mut Connection, ws: &mut Socket, st: &mut State) {
        let m = &self.measures;
        let Some(s) = c.patches.as_mut() else { return };
        add(&m.counters.sends_skipped, s.advance(m.elapsed()));
        st.op_id += 1;
        let op_id = st.op_id;
        let (x, y) = cursor_at(self.plan.index + 7, op_id * 4);
        let extra = if self.track {
            format!(r#","{}":1"#, mark(self.plan.index, op_id))
        } else {
            String::new()
        };
        let ops = format!(
            r#"[{{"op":"set","id":"{}","props":{{"x":{x},"y":{y}{extra}}}}}]"#,
            self.plan.rect
        );
        let msg = format!(
            r#"{{"type":"patch","id":{op_id},"ops":{ops},"t":{}}}"#,
            m.now_ms()
        );
        if self.track {
            st.pending.insert(op_id, ops);
        }
        if ws.send(Message::Text(msg.into())).await.is_ok() {
            add(&m.counters.patches_sent, 1);
            add(&m.counters.messages_sent, 1);
        }
    }

    /// Connects, says hello and waits for the welcome (and, in tracking mode, returns the whole
    /// welcome too). Failures of a first attempt are counted.
    async fn join(
        &mut self,
        client_id: &str,
        since: Option<u64>,
    ) -> Result<(Socket, Welcome, Option<Value>), JoinFailed> {
        let track = self.track;
        let attempt = async {
            let addr = self
                .ws_url
                .trim_start_matches("ws://")
                .split('/')
                .next()
                .unwrap_or_default()
                .to_string();
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|_| JoinFailed::default())?;
            let _ = tcp.set_nodelay(true);
            let (mut ws, _) = client_async_with_config(
                self.ws_url.as_str(),
                MaybeTlsStream::Plain(tcp),
                Some(ws_config()),
            )
            .await
            .map_err(|e| match e {
                // A status other than 101 is an answer, not a reset.
                tokio_tungstenite::tungstenite::Error::Http(_) => JoinFailed::default(),
                _ => JoinFailed::reset(),
            })?;
            let hello = serde_json::json!({
                "type": "hello", "token": self.token, "key": self.key,
                "client": client_id, "since": since,
                "name": format!("Load {}", self.plan.index),
            });
            ws.send(Message::Text(hello.to_string().into()))
                .await
                .map_err(|_| JoinFailed::reset())?;
            while let Some(frame) = ws.next().await {
                match frame {
                    Ok(Message::Text(text)) => {
                        if let Ok(w) = serde_json::from_str::<Welcome>(text.as_str()) {
                            if w.kind == "welcome" {
                                let full = if track {
                                    serde_json::from_str::<Value>(text.as_str()).ok()
                                } else {
                                    None
                                };
                                return Ok((ws, w, full));
                            }
                        }
                    }
                    Ok(Message::Close(close)) => {
                        return Err(JoinFailed {
                            code: Some(close.as_ref().map_or(1005, |c| u16::from(c.code))),
                            retry: close.as_ref().and_then(|c| retry_hint(&c.reason)),
                            reset: false,
                        });
                    }
                    Ok(_) => {}
                    Err(_) => return Err(JoinFailed::reset()),
                }
            }
            Err(JoinFailed::reset())
        };
        timeout(CONNECT_TIMEOUT, attempt)
            .await
            .unwrap_or(Err(JoinFailed::default()))
    }
}

/// Why a join failed: the close code (none for a lost connection) and the node's hint of
/// when to come back (`retry-ms=N` at the end of a 1013's reason).
#[derive(Debug, Default)]
struct JoinFailed {
    code: Option<u16>,
    retry: Option<Duration>,
    /// The connection was reset (or ended without a close frame) after the TCP connect.
    reset: bool,
}

impl JoinFailed {
    fn reset() -> Self {
        Self {
            reset: true,
            ..Self::default()
        }
    }
}

/// The `retry-ms=N` hint at the end of a close reason, if any (capped at 30 s).
fn retry_hint(reason: &str) -> Option<Duration> {
    let ms = atrium_protocol::retry_hint_ms(reason)?;
    Some(Duration::from_millis(ms.min(30_000)))
}

/// Whether a close code before the welcome asks the client to come back (the contract's
/// table): not for a bad client, a refusal, a replacement or a cap that waits for the person.
/// A code the contract does not know is retried.
fn retryable(code: u16) -> bool {
    CloseCode::from_code(code).is_none_or(|c| !c.is_final())
}

/// Waits for the run's next end signal; gives the receiver back, and false when the run is gone.
async fn next_end(mut rx: watch::Receiver<End>) -> (watch::Receiver<End>, bool) {
    let changed = rx.changed().await.is_ok();
    (rx, changed)
}

/// Records the latency of every full entry (people on the same page) of a presences message.
fn record_presences(m: &Measures, text: &str) {
    let Ok(p) = serde_json::from_str::<Presences>(text) else {
        return;
    };
    for entry in p.people {
        if let (Some(_), Some(t)) = (entry.cursor, entry.t) {
            m.record_since(&m.presence, t);
        }
    }
}

/// Closes with a handshake: our close frame, then reads until the node's answer (2 s at most).
async fn close(mut ws: Socket) {
    let _ = timeout(Duration::from_secs(2), async {
        let _ = ws
            .close(Some(tokio_tungstenite::tungstenite::protocol::CloseFrame {
                code: WsCloseCode::Normal,
                reason: "".into(),
            }))
            .await;
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nodes_hint_of_when_to_come_back_is_read_from_the_close_reason() {
        let hint = retry_hint("the node is busy with other joins; retry-ms=1840");
        assert_eq!(hint, Some(Duration::from_millis(1840)));
        assert_eq!(retry_hint("the store is unavailable"), None);
        assert_eq!(retry_hint("retry-ms=soon"), None);
        assert_eq!(retry_hint("retry-ms=999999"), Some(Duration::from_secs(30)));
    }

    #[test]
    fn a_version_gap_is_a_dropped_patch() {
        let mut v = Versions { last: 4 };
        assert_eq!(v.see(5), (0, false));
        assert_eq!(v.see(8), (2, false));
        assert_eq!(v.see(7), (0, true));
        assert_eq!(v.last, 8);
    }

    #[test]
    fn leading_types_are_read_without_parsing() {
        assert_eq!(
            leading_type(r#"{"type":"presences","people":[]}"#),
            Some("presences")
        );
        assert_eq!(leading_type(r#"{"type":"ack","id":1,"v":2}"#), Some("ack"));
        assert_eq!(leading_type(r#"{"code":429,"type":"notice"}"#), None);
    }

    #[test]
    fn cursors_stay_on_the_canvas() {
        for step in 0..500 {
            let (x, y) = cursor_at(3, step);
            assert!((100.0..=700.0).contains(&x) && (100.0..=500.0).contains(&y));
        }
        assert_ne!(cursor_at(3, 1), cursor_at(3, 2));
    }
}
