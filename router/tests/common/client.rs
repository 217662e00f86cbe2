//! One person's socket to a file, through a router or straight to a node.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::{secret, WAIT};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// One person's socket to a file.
pub struct Client {
    pub ws: Ws,
    pub client: String,
    /// The highest version seen (welcome, acks, relayed patches).
    pub version: u64,
}

/// What came out of a socket.
#[derive(Debug)]
pub enum Event {
    Json(Value),
    Close(Option<u16>),
    Ended,
    Timeout,
}

impl Client {
    /// Opens the socket through `port`, says hello, waits for the welcome. `None` when the
    /// upgrade fails or the node closes the socket before welcoming (e.g. 4009).
    pub async fn try_join(
        port: u16,
        file: &str,
        token: &str,
        client: &str,
        since: Option<u64>,
    ) -> Option<Client> {
        let url = format!("ws://127.0.0.1:{port}/files/{file}/ws");
        let (ws, _) = match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url)).await
        {
            Ok(Ok(ok)) => ok,
            other => {
                eprintln!("upgrade of {file} through port {port} failed: {other:?}");
                return None;
            }
        };
        let mut c = Client {
            ws,
            client: client.to_string(),
            version: 0,
        };
        let hello = json!({"type": "hello", "token": token, "client": client, "since": since});
        c.ws.send(Message::text(hello.to_string())).await.ok()?;
        loop {
            match c.next(WAIT).await {
                Event::Json(v) if v["type"] == "welcome" => {
                    c.version = v["version"].as_u64().unwrap_or(0);
                    if let Some(resume) = v["resume"].as_array() {
                        for p in resume {
                            c.version = c.version.max(p["v"].as_u64().unwrap_or(0));
                        }
                    }
                    return Some(c);
                }
                Event::Json(_) => continue,
                other => {
                    eprintln!(
                        "join of {file} through port {port} ended before a welcome: {other:?}"
                    );
                    return None;
                }
            }
        }
    }

    pub async fn join(port: u16, file: &str, token: &str) -> Client {
        Client::try_join(port, file, token, &secret(), None)
            .await
            .unwrap_or_else(|| panic!("could not join {file} through port {port}"))
    }

    /// Joins again (same client id, resuming) until welcomed, within `patience`.
    pub async fn rejoin(
        ports: &[u16],
        file: &str,
        token: &str,
        client: &str,
        since: u64,
        patience: Duration,
    ) -> Client {
        let deadline = Instant::now() + patience;
        let mut i = 0;
        loop {
            let port = ports[i % ports.len()];
            i += 1;
            if let Some(c) = Client::try_join(port, file, token, client, Some(since)).await {
                return c;
            }
            assert!(
                Instant::now() < deadline,
                "could not rejoin {file} within {patience:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn next(&mut self, within: Duration) -> Event {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return Event::Timeout,
                Ok(None) | Ok(Some(Err(_))) => return Event::Ended,
                Ok(Some(Ok(Message::Text(t)))) => {
                    let v: Value = serde_json::from_str(t.as_str()).expect("JSON from the server");
                    if let Some(n) = v["v"].as_u64() {
                        self.version = self.version.max(n);
                    }
                    return Event::Json(v);
                }
                Ok(Some(Ok(Message::Close(frame)))) => {
                    return Event::Close(frame.map(|f| u16::from(f.code)))
                }
                Ok(Some(Ok(_))) => continue,
            }
        }
    }

    pub async fn send_patch(&mut self, id: u64, key: &str, value: Value) {
        let msg = json!({"type": "patch", "id": id, "ops": [
            {"op": "put", "id": key, "props": {"type": "rect", "x": value}}
        ]});
        self.ws
            .send(Message::text(msg.to_string()))
            .await
            .expect("send a patch");
    }

    /// Waits for a message of `ty` (for `ack`, with `id`), skipping others.
    pub async fn expect(&mut self, ty: &str, id: Option<u64>, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Event::Json(v) if v["type"] == ty && id.is_none_or(|i| v["id"] == json!(i)) => {
                    return v
                }
                Event::Json(_) => continue,
                other => panic!("waiting for {ty}: got {other:?}"),
            }
        }
    }
}
