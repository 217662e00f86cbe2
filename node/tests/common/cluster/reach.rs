//! Reaching a cluster's nodes: an HTTP request that may go unanswered, a socket
//! attempt, and the node a `409 moved` names.

use super::*;

/// The node a 409 `moved` answer names (asserting its shape).
pub fn moved_to(r: &Resp) -> String {
    r.assert_error(409, "moved");
    s(&r.body()["error"]["node"]).to_string()
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
