//! Joining a file: the socket, the hello, the welcome; why a join failed; the close.

use std::time::Duration;

use atrium_protocol::CloseCode;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode as WsCloseCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{client_async_with_config, MaybeTlsStream};

use super::messages::Welcome;
use super::{Client, Socket};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes a socket reads at a time. tungstenite's default (128 KiB) is zeroed again before every
/// read: with thousands of small messages a second that memset was a visible part of the
/// generator's CPU, and the buffers its memory. At 16 KiB it was still the top item of the
/// generator's own profile (11% of its samples, pinned to one core at 1,000 people); the
/// node's messages are mostly under 1 KB, and larger ones are still read whole, in more reads.
pub const READ_BUFFER: usize = 4 * 1024;

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_BUFFER)
}

impl Client {
    /// Connects, says hello and waits for the welcome (and, in tracking mode, returns the whole
    /// welcome too). Failures of a first attempt are counted.
    pub(super) async fn join(
        &mut self,
        client_id: &str,
        since: Option<u64>,
    ) -> Result<(Socket, Welcome, Option<Value>), JoinFailed> {
        let track = self.track;
        let attempt = async {
            let url = &self.ws_urls[self.via];
            let addr = url
                .trim_start_matches("ws://")
                .split('/')
                .next()
                .unwrap_or_default()
                .to_string();
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|_| JoinFailed::unreachable())?;
            let _ = tcp.set_nodelay(true);
            let (mut ws, _) = client_async_with_config(
                url.as_str(),
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
                            ..JoinFailed::default()
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
pub(super) struct JoinFailed {
    pub(super) code: Option<u16>,
    pub(super) retry: Option<Duration>,
    /// The connection was reset (or ended without a close frame) after the TCP connect.
    pub(super) reset: bool,
    /// The TCP connect failed (refused: nothing listens there).
    pub(super) unreachable: bool,
}

impl JoinFailed {
    pub(super) fn unreachable() -> Self {
        Self {
            unreachable: true,
            ..Self::default()
        }
    }

    pub(super) fn reset() -> Self {
        Self {
            reset: true,
            ..Self::default()
        }
    }
}

/// The `retry-ms=N` hint at the end of a close reason, if any (capped at 30 s).
pub(super) fn retry_hint(reason: &str) -> Option<Duration> {
    let ms = atrium_protocol::retry_hint_ms(reason)?;
    Some(Duration::from_millis(ms.min(30_000)))
}

/// Whether a close code before the welcome asks the client to come back (the contract's
/// table): not for a bad client, a refusal, a replacement or a cap that waits for the person.
/// A code the contract does not know is retried.
pub(super) fn retryable(code: u16) -> bool {
    CloseCode::from_code(code).is_none_or(|c| !c.is_final())
}

/// Closes with a handshake: our close frame, then reads until the node's answer (2 s at most).
pub(super) async fn close(mut ws: Socket) {
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
