//! `atrium_node::ws` on a real socket: an in-process hyper server speaking it,
//! against tokio-tungstenite (an independent implementation, no deflate) and
//! against a hand-written client that negotiates permessage-deflate.

use std::convert::Infallible;
use std::time::Duration;

use atrium_node::ws::{self, frame, Incoming, Outgoing, Reader, ReaderLimits};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::body::Incoming as Body;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

const MAX_MESSAGE: usize = 100_000;
/// A message of the room that is worth compressing.
fn big_payload() -> String {
    "{\"type\":\"patch\",\"ops\":[[\"set\",\"shape\",{\"x\":1}]]}".repeat(100)
}

/// Starts the server; returns its port.
async fn start_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let service = service_fn(|req| async move { Ok::<_, Infallible>(upgrade(req)) });
                let conn = http1::Builder::new().serve_connection(TokioIo::new(tcp), service);
                let _ = conn.with_upgrades().await;
            });
        }
    });
    port
}

fn upgrade(mut req: Request<Body>) -> Response<Full<Bytes>> {
    let accepted = match ws::accept(&req, true) {
        Ok(accepted) => accepted,
        Err(e) => {
            let mut response = Response::new(Full::new(Bytes::from(e.to_string())));
            *response.status_mut() = StatusCode::BAD_REQUEST;
            return response;
        }
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    let deflate = accepted.deflate;
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            echo(TokioIo::new(upgraded), deflate).await;
        }
    });
    accepted.response
}

/// Echoes text; "big" gets the room's big message, "ping me" a ping (and the
/// pong that follows gets "got pong"); answers pings, closes, errors.
async fn echo<S: AsyncRead + AsyncWrite + Unpin>(io: S, deflate: bool) {
    let (rd, mut wr) = tokio::io::split(io);
    let limits = ReaderLimits {
        max_message: MAX_MESSAGE,
        ..ReaderLimits::default()
    };
    let mut reader = Reader::new(rd, limits, deflate);
    let big = Outgoing::new(Bytes::from(big_payload()), true);
    loop {
        let reply = match reader.next().await {
            Ok(Incoming::Text(text)) if text == "big" => big.frame(deflate),
            Ok(Incoming::Text(text)) if text == "ping me" => frame::ping(b"from server"),
            Ok(Incoming::Text(text)) => frame::text(text.as_bytes()),
            Ok(Incoming::Pong) => frame::text(b"got pong"),
            Ok(Incoming::Ping(payload)) => frame::pong(&payload),
            Ok(Incoming::Binary) => {
                frame::close(atrium_protocol::CloseCode::Unsupported.code(), "text only")
            }
            Ok(Incoming::Close(code)) => {
                let _ = wr.write_all(&frame::close(code.unwrap_or(1000), "")).await;
                return;
            }
            Err(e) => {
                if let Some(code) = e.close_code() {
                    let _ = wr
                        .write_all(&frame::close(code.code(), &e.to_string()))
                        .await;
                }
                return;
            }
        };
        if wr.write_all(&reply).await.is_err() {
            return;
        }
    }
}

async fn tungstenite_client(
    port: u16,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>> {
    let url = format!("ws://127.0.0.1:{port}/socket");
    let (client, response) = tokio_tungstenite::connect_async(url).await.unwrap();
    assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
    client
}

async fn next_message<S>(client: &mut S) -> Message
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    let next = tokio::time::timeout(Duration::from_secs(5), client.next()).await;
    next.expect("an answer in time")
        .expect("an open socket")
        .unwrap()
}

#[tokio::test]
async fn tungstenite_text_ping_and_close() {
    let port = start_server().await;
    let mut client = tungstenite_client(port).await;
    let long = "x".repeat(70_000);
    for text in ["hello", "", "ünïcødé", &"m".repeat(300), &long] {
        client.send(Message::text(text)).await.unwrap();
        assert_eq!(next_message(&mut client).await, Message::text(text));
    }
    client.send(Message::text("big")).await.unwrap();
    assert_eq!(
        next_message(&mut client).await,
        Message::text(big_payload())
    );
    client
        .send(Message::Ping(Bytes::from_static(b"are you there")))
        .await
        .unwrap();
    let pong = Message::Pong(Bytes::from_static(b"are you there"));
    assert_eq!(next_message(&mut client).await, pong);
    // tungstenite answers the server's ping by itself.
    client.send(Message::text("ping me")).await.unwrap();
    let ping = Message::Ping(Bytes::from_static(b"from server"));
    assert_eq!(next_message(&mut client).await, ping);
    assert_eq!(next_message(&mut client).await, Message::text("got pong"));
    client.close(Some(close_frame(4001, "done"))).await.unwrap();
    match next_message(&mut client).await {
        Message::Close(Some(frame)) => assert_eq!(u16::from(frame.code), 4001),
        other => panic!("expected a close, got {other:?}"),
    }
}

fn close_frame(
    code: u16,
    reason: &'static str,
) -> tokio_tungstenite::tungstenite::protocol::CloseFrame {
    tokio_tungstenite::tungstenite::protocol::CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    }
}

async fn closed_with(message: Message) -> u16 {
    let port = start_server().await;
    let mut client = tungstenite_client(port).await;
    client.send(message).await.unwrap();
    match next_message(&mut client).await {
        Message::Close(Some(frame)) => u16::from(frame.code),
        other => panic!("expected a close, got {other:?}"),
    }
}

#[tokio::test]
async fn tungstenite_sees_close_codes() {
    assert_eq!(
        closed_with(Message::text("y".repeat(MAX_MESSAGE + 1))).await,
        1009
    );
    assert_eq!(closed_with(Message::binary(vec![1, 2, 3])).await, 1003);
}

#[tokio::test]
async fn bad_upgrade_gets_400() {
    let port = start_server().await;
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = "GET /socket HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
}

/// A masked client frame, by hand.
fn client_frame(first: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [9u8, 8, 7, 6];
    let mut out = vec![first];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n => {
            out.push(0x80 | 126);
            out.extend_from_slice(&u16::try_from(n).unwrap().to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().zip(mask.iter().cycle()).map(|(b, m)| b ^ m));
    out
}

/// Reads one unmasked server frame: (first byte, payload).
async fn server_frame(tcp: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 2];
    tcp.read_exact(&mut head).await.unwrap();
    assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
    let len = match head[1] & 0x7f {
        126 => usize::from(tcp.read_u16().await.unwrap()),
        127 => usize::try_from(tcp.read_u64().await.unwrap()).unwrap(),
        n => usize::from(n),
    };
    let mut payload = vec![0; len];
    tcp.read_exact(&mut payload).await.unwrap();
    (head[0], payload)
}

fn raw_deflate(payload: &[u8]) -> Vec<u8> {
    let mut c = flate2::Compress::new(flate2::Compression::best(), false);
    let mut out = Vec::with_capacity(payload.len() + 64);
    c.compress_vec(payload, &mut out, flate2::FlushCompress::Sync)
        .unwrap();
    out.truncate(out.len() - 4);
    out
}

fn raw_inflate(payload: &[u8]) -> String {
    let data = [payload, &[0, 0, 0xff, 0xff]].concat();
    let mut d = flate2::Decompress::new(false);
    let mut out = Vec::with_capacity(1 << 20);
    d.decompress_vec(&data, &mut out, flate2::FlushDecompress::Sync)
        .unwrap();
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn hand_written_client_with_deflate() {
    let port = start_server().await;
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = "GET /socket HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n\
        Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
        Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n";
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(tcp.read_u8().await.unwrap());
    }
    let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=\r\n"));
    let agreed = "permessage-deflate; server_no_context_takeover; client_no_context_takeover";
    assert!(head.contains(&format!("sec-websocket-extensions: {agreed}\r\n")));

    // A compressed message from the client, echoed back uncompressed.
    let text = "compress me, ".repeat(40);
    tcp.write_all(&client_frame(0xc1, &raw_deflate(text.as_bytes())))
        .await
        .unwrap();
    let (first, payload) = server_frame(&mut tcp).await;
    assert_eq!((first, payload), (0x81, text.into_bytes()));
    // The room's big message comes compressed on a deflate socket.
    tcp.write_all(&client_frame(0x81, b"big")).await.unwrap();
    let (first, payload) = server_frame(&mut tcp).await;
    assert_eq!(first, 0xc1);
    assert!(payload.len() < big_payload().len() / 4);
    assert_eq!(raw_inflate(&payload), big_payload());
    // Small messages stay plain.
    tcp.write_all(&client_frame(0x81, b"small")).await.unwrap();
    assert_eq!(server_frame(&mut tcp).await, (0x81, b"small".to_vec()));
    tcp.write_all(&client_frame(0x88, &1000u16.to_be_bytes()))
        .await
        .unwrap();
    assert_eq!(server_frame(&mut tcp).await, (0x88, vec![0x03, 0xe8]));
}
