//! A deliberately broken server is caught: the tool runs (`--url`) against a test double of a
//! node that relays patches but skips one version, and must report a dropped patch; the same
//! double without the fault must give none.
//!
//! The double speaks just enough of the node's protocol for the tool: `/health`, sign-up, file
//! creation and the link change over HTTP/1.1, and on `/files/<id>/ws` a WebSocket (accepted
//! with tokio-tungstenite's `accept_async`) that answers `hello` with `welcome`, gives every
//! patch the file's next version, acks it to its sender and relays it to everyone else in the
//! file. Presence is read and ignored.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use common::run_to_end;

/// The version the broken double never hands out (each file skips it once).
const SKIPPED_VERSION: u64 = 10;

#[derive(Default)]
struct Room {
    version: u64,
    members: Vec<(String, mpsc::UnboundedSender<String>)>,
}

struct State {
    broken: bool,
    next: AtomicU64,
    rooms: Mutex<HashMap<String, Room>>,
}

/// The double, serving on a loopback port from its own runtime until dropped.
struct FakeNode {
    url: String,
    _runtime: tokio::runtime::Runtime,
}

impl FakeNode {
    fn start(broken: bool) -> FakeNode {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State {
            broken,
            next: AtomicU64::new(1),
            rooms: Mutex::new(HashMap::new()),
        });
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, state.clone()));
            }
        });
        FakeNode {
            url,
            _runtime: runtime,
        }
    }
}

/// The request line, read without consuming it (a WebSocket upgrade is handed on whole).
async fn peek_request_line(stream: &TcpStream) -> Option<String> {
    let mut buf = [0u8; 2048];
    for _ in 0..500 {
        let n = stream.peek(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        if let Some(end) = buf[..n].windows(2).position(|w| w == b"\r\n") {
            return Some(String::from_utf8_lossy(&buf[..end]).into_owned());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    None
}

async fn serve(stream: TcpStream, state: Arc<State>) {
    let Some(line) = peek_request_line(&stream).await else {
        return;
    };
    let mut parts = line.split(' ');
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if let Some(file) = path
        .strip_prefix("/files/")
        .and_then(|p| p.strip_suffix("/ws"))
    {
        let file = file.to_string();
        if let Ok(ws) = tokio_tungstenite::accept_async(stream).await {
            socket(ws, file, state).await;
        }
        return;
    }
    let method = method.to_string();
    let path = path.to_string();
    let _ = http(stream, &method, &path, &state).await;
}

/// One HTTP/1.1 request (the tool sends `connection: close`), answered with JSON.
async fn http(
    mut stream: TcpStream,
    method: &str,
    path: &str,
    state: &State,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let n = state.next.fetch_add(1, Ordering::Relaxed);
    let (status, body) = match (method, path) {
        ("GET", "/health") => ("200 OK", json!({"ok": true})),
        ("POST", "/api/signup") => ("200 OK", json!({"token": format!("token-{n}")})),
        ("POST", "/api/files") => (
            "200 OK",
            json!({"id": format!("f{n}"), "view_key": format!("view-{n}"), "edit_key": format!("edit-{n}")}),
        ),
        ("PATCH", p) if p.starts_with("/api/files/") => ("200 OK", json!({"ok": true})),
        _ => (
            "404 Not Found",
            json!({"error": {"message": "not in the test double"}}),
        ),
    };
    let body = body.to_string();
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(answer.as_bytes()).await?;
    stream.shutdown().await
}

async fn socket(
    mut ws: tokio_tungstenite::WebSocketStream<TcpStream>,
    file: String,
    state: Arc<State>,
) {
    let hello: Value = loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => match serde_json::from_str(t.as_str()) {
                Ok(v) => break v,
                Err(_) => return,
            },
            Some(Ok(_)) => continue,
            _ => return,
        }
    };
    let editor = hello["key"]
        .as_str()
        .is_some_and(|k| k.starts_with("edit-"));
    let you = format!("c{}", state.next.fetch_add(1, Ordering::Relaxed));
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    // Join and read the version under one lock, so no patch falls between them.
    let version = {
        let mut rooms = state.rooms.lock().unwrap();
        let room = rooms.entry(file.clone()).or_default();
        room.members.push((you.clone(), tx));
        room.version
    };
    let welcome = json!({
        "type": "welcome", "you": you, "role": if editor { "editor" } else { "viewer" },
        "version": version, "presence_hz": 20,
    });
    if ws
        .send(Message::Text(welcome.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    loop {
        tokio::select! {
            frame = ws.next() => match frame {
                Some(Ok(Message::Text(t))) => {
                    let Ok(msg) = serde_json::from_str::<Value>(t.as_str()) else { continue };
                    if msg["type"] == "patch" && editor {
                        patch(&state, &file, &you, &msg);
                    }
                }
                Some(Ok(_)) => {}
                _ => break,
            },
            out = rx.recv() => match out {
                Some(text) => {
                    if ws.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                None => break,
            },
        }
    }
    let mut rooms = state.rooms.lock().unwrap();
    if let Some(room) = rooms.get_mut(&file) {
        room.members.retain(|(id, _)| *id != you);
    }
}

/// Gives the patch the file's next version (the broken double jumps over one), acks it to its
/// sender and relays it to the others. Everything is queued under the room's lock, so every
/// member gets versions in order.
fn patch(state: &State, file: &str, you: &str, msg: &Value) {
    let mut rooms = state.rooms.lock().unwrap();
    let room = rooms.get_mut(file).unwrap();
    room.version += 1;
    if state.broken && room.version == SKIPPED_VERSION {
        room.version += 1;
    }
    let v = room.version;
    let ack = json!({"type": "ack", "id": msg["id"], "v": v, "t": msg["t"]}).to_string();
    let relay =
        json!({"type": "patch", "v": v, "by": you, "ops": msg["ops"], "t": msg["t"]}).to_string();
    for (id, tx) in &room.members {
        let _ = tx.send(if id == you {
            ack.clone()
        } else {
            relay.clone()
        });
    }
}

/// Runs the tool against `url` with a small load and returns its JSON report.
fn run_tool(url: &str, name: &str) -> Value {
    let json: PathBuf = std::env::temp_dir().join(format!(
        "atrium-loadtest-double-{name}-{}.json",
        std::process::id()
    ));
    run_to_end(
        Command::new(env!("CARGO_BIN_EXE_atrium-loadtest"))
            .args(["--url", url])
            .args(["--users", "6", "--files", "1", "--editors", "0.5"])
            .args([
                "--edit-rate",
                "10",
                "--presence-rate",
                "2",
                "--accounts",
                "0",
            ])
            .args(["--warmup", "0.5", "--duration", "1.5", "--workers", "1"])
            .arg("--json")
            .arg(&json),
    );
    let report = std::fs::read_to_string(&json).unwrap();
    let _ = std::fs::remove_file(&json);
    serde_json::from_str(&report).unwrap()
}

#[test]
fn a_server_that_skips_a_version_is_caught_as_a_dropped_patch() {
    let broken = FakeNode::start(true);
    let r = run_tool(&broken.url, "broken");
    let p = &r["problems"];
    // 3 editors at 10/s in one file pass version 10 well within the run; every one of the 6
    // clients sees the gap, in an ack or in a relay.
    let dropped = p["dropped_patches"].as_u64().unwrap();
    eprintln!("broken double: {dropped} dropped patches reported");
    assert!(dropped >= 1, "the skipped version went unnoticed: {p}");
    assert!(
        dropped <= 6,
        "one skipped version, at most once per client: {p}"
    );
    assert_eq!(p["out_of_order"], 0, "{p}");
    assert!(r["patch_relay_ms"]["count"].as_u64().unwrap() > 0, "{r}");
}

#[test]
fn the_same_server_without_the_fault_drops_nothing() {
    let honest = FakeNode::start(false);
    let r = run_tool(&honest.url, "honest");
    let p = &r["problems"];
    assert_eq!(p["dropped_patches"], 0, "{p}");
    assert_eq!(p["out_of_order"], 0, "{p}");
    assert_eq!(p["connection_errors"], 0, "{p}");
    assert_eq!(r["connected"], 6, "{r}");
    assert_eq!(r["editors"], 3, "{r}");
    assert!(
        r["rates"]["patches_received_per_s"].as_f64().unwrap() > 0.0,
        "{r}"
    );
    assert_eq!(r["server"]["messages_counted_by"], "generator");
}
