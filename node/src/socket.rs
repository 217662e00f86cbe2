//! One WebSocket, from upgrade to close: the hello handshake, then messages to
//! the room and frames from the socket's outbox.
//!
//! The socket is split in two halves that run side by side in one task: the
//! reader parses what the client sends and hands it to the room; the writer
//! drains the outbox in batches (one flush per batch) and sends the close frame
//! when someone asks for one.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use tokio::time::{timeout, timeout_at, Instant};
use yawc::frame::OpCode;
use yawc::{Frame, HttpStream, WebSocket, WebSocketError};

use std::collections::VecDeque;

use crate::ids::{digest, ClientKey, FileId};
use crate::limits::{AddressSlot, Bucket};
use crate::metrics::metrics;
use crate::outbox::{outbox, Outbox, OutboxReceiver};
use crate::protocol::{self, ClientMessage, Refusal};
use crate::room::registry::RoomHandle;
use crate::room::{JoinRequest, RoomCmd};
use crate::server::AppState;
use std::sync::atomic::{AtomicU64, Ordering};

/// How long the final flush and close of a socket may take.
const CLOSE_DEADLINE: Duration = Duration::from_secs(2);
/// Frames written before one flush.
const WRITE_BATCH: usize = 64;

/// The yawc socket as a stream of results, so the reader learns why a read failed
/// (yawc has already queued the matching close frame: 1009, 1007, 1002...).
struct Frames(WebSocket<HttpStream>);

impl Stream for Frames {
    type Item = Result<Frame, WebSocketError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().0.poll_next_frame(cx).map(Some)
    }
}

impl Sink<Frame> for Frames {
    type Error = WebSocketError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().0).poll_ready(cx)
    }

    fn start_send(self: Pin<&mut Self>, item: Frame) -> Result<(), Self::Error> {
        Pin::new(&mut self.get_mut().0).start_send(item)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().0).poll_close(cx)
    }
}

/// Options for every accepted socket: the contract's message limit, no Nagle, and
/// a deadline for fragmented messages that never end. UTF-8 is checked by the
/// reader (yawc's own check would drop the socket without a 1007).
pub fn socket_options(max_message: usize) -> yawc::Options {
    // yawc's limits are exclusive; the contract's are inclusive.
    yawc::Options::default()
        .with_limits(max_message + 1, 2 * (max_message + 1))
        .with_no_delay()
        .with_fragment_timeout(Duration::from_secs(10))
}

/// Where a socket is in its life.
struct Session {
    state: Arc<AppState>,
    file: FileId,
    outbox: Outbox,
    room: Option<RoomHandle>,
    token: Option<[u8; 32]>,
    /// The fleet-wide counter this socket holds a slot of (sockets per account).
    account_slot: Option<String>,
}

/// When the client was last heard from (any frame at all, pongs included).
struct Liveness {
    started: Instant,
    /// Milliseconds after `started`.
    heard: AtomicU64,
}

impl Liveness {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            heard: AtomicU64::new(0),
        }
    }

    fn heard_now(&self) {
        let ms = self.started.elapsed().as_millis() as u64;
        self.heard.store(ms, Ordering::Relaxed);
    }

    fn last_heard(&self) -> Instant {
        self.started + Duration::from_millis(self.heard.load(Ordering::Relaxed))
    }
}

/// Completes once nothing was heard from the client for `limit`.
async fn silence(liveness: &Liveness, limit: Duration) {
    loop {
        let deadline = liveness.last_heard() + limit;
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline).await;
    }
}

/// Serves one upgraded socket until it closes.
pub async fn serve(
    ws: WebSocket<HttpStream>,
    file: FileId,
    state: Arc<AppState>,
    address_slot: Option<AddressSlot>,
) {
    metrics().connections.inc();
    let (out, mut rx) = outbox(state.config.send_queue, state.config.send_queue_bytes);
    let (mut sink, mut stream) = Frames(ws).split();
    if address_slot.is_none() {
        out.close(4029, "too many sockets from this address");
    }
    let ping = (state.config.ping_interval(), state.config.ping_timeout());
    let mut session = Session {
        state,
        file,
        outbox: out,
        room: None,
        token: None,
        account_slot: None,
    };
    let closing = rx.close.clone();
    let liveness = Liveness::new();
    let watchdog_outbox = session.outbox.clone();
    {
        let reader = read(&mut stream, &mut session, &liveness);
        let writer = write(&mut sink, &mut rx, ping.0);
        tokio::pin!(reader, writer);
        tokio::select! {
            _ = &mut writer => {
                // Our close frame is out: read until the client answers it, briefly,
                // so unread bytes do not turn the close into a reset.
                let _ = timeout(CLOSE_DEADLINE, &mut reader).await;
            }
            _ = &mut reader => {
                if closing.requested().is_some() {
                    let _ = timeout(CLOSE_DEADLINE, &mut writer).await;
                }
            }
            _ = silence(&liveness, ping.1) => {
                // Nothing heard, not even a pong: the peer is gone or stuck.
                tracing::debug!("socket stopped answering; closing");
                watchdog_outbox.close(1001, "no answer to pings");
                let _ = timeout(CLOSE_DEADLINE, &mut writer).await;
            }
        }
    }
    if let Some(room) = &session.room {
        let _ = room.tx.send(RoomCmd::Leave(session.outbox.id));
    }
    if let Some(token) = session.token {
        session.state.sockets.remove(token, session.outbox.id);
    }
    if let Some(counter) = &session.account_slot {
        let state = &session.state;
        if let Err(e) = state.coordinator.count_down(counter, &state.node).await {
            tracing::warn!(error = %e, "could not give back an account socket slot");
        }
    }
    drop(address_slot);
    metrics().connections.dec();
}

/// A ping interval drawn at random within ±25% of `every`, so a crowd that
/// connected together does not ping together.
fn jittered(every: Duration) -> Duration {
    let quarter = every / 4;
    every - quarter + quarter.mul_f64(2.0 * rand::random::<f64>())
}

async fn write(sink: &mut SplitSink<Frames, Frame>, rx: &mut OutboxReceiver, ping_every: Duration) {
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    let close = rx.close.clone();
    let mut next_ping = Instant::now() + jittered(ping_every);
    loop {
        tokio::select! {
            biased;
            _ = tokio::time::sleep_until(next_ping) => {
                next_ping = Instant::now() + jittered(ping_every);
                let ping = timeout(CLOSE_DEADLINE, sink.send(Frame::ping(Bytes::new()))).await;
                if !matches!(ping, Ok(Ok(()))) {
                    return;
                }
            }
            req = close.closed() => {
                let mut frames = rx.drain_now();
                if req.code == crate::outbox::CLOSE_TOO_SLOW {
                    frames.clear();
                }
                let r = timeout(CLOSE_DEADLINE, async {
                    for f in frames {
                        sink.feed(Frame::text(f)).await?;
                    }
                    sink.send(Frame::close(req.code.into(), req.reason.as_bytes())).await
                })
                .await;
                tracing::debug!(code = req.code, result = ?r, "close sent");
                return;
            }
            n = rx.recv_many(&mut batch, WRITE_BATCH) => {
                if n == 0 {
                    return;
                }
                let sent = batch.iter().map(Bytes::len).sum::<usize>();
                let frames = std::mem::take(&mut batch);
                let flushed = async {
                    for f in frames {
                        sink.feed(Frame::text(f)).await?;
                    }
                    sink.flush().await
                };
                // A peer that stops reading blocks the flush; a close request
                // (its queue overflowing, say) ends the wait.
                tokio::select! {
                    r = flushed => {
                        if r.is_err() {
                            return;
                        }
                        metrics().bytes_sent.inc_by(sent as u64);
                    }
                    _ = close.closed() => {}
                }
            }
        }
    }
}

async fn read(stream: &mut SplitStream<Frames>, session: &mut Session, liveness: &Liveness) {
    let deadline = Instant::now() + session.state.config.hello_timeout();
    let stopping = session.state.stopping.clone();
    // Before hello: only a hello is accepted, until the deadline.
    let hello = loop {
        let next = tokio::select! {
            next = timeout_at(deadline, next_frame(stream, &session.outbox, liveness)) => next,
            _ = stopped(stopping.clone()) => {
                session.outbox.close(1012, "server restarting");
                drain(stream).await;
                return;
            }
        };
        let text = match next {
            Ok(Next::Text(text)) => text,
            Ok(Next::Skip) => continue,
            Ok(Next::End) => {
                drain_if_closing(stream, &session.outbox).await;
                return;
            }
            Err(_) => {
                session.outbox.close(4000, "no hello in time");
                drain(stream).await;
                return;
            }
        };
        match protocol::parse(&text, &session.state.limits) {
            Ok(ClientMessage::Hello(hello)) => break hello,
            Ok(_) => refuse(&session.outbox, Refusal::invalid_before_hello()),
            Err(r) => refuse(&session.outbox, r),
        }
    };
    metrics()
        .messages_received
        .with_label_values(&["hello"])
        .inc();
    if let Err(code) = join(session, hello).await {
        session.outbox.close(code.0, code.1);
        drain(stream).await;
        return;
    }
    let Some(room) = session.room.clone() else {
        return;
    };
    let config = &session.state.config;
    let now = std::time::Instant::now();
    let rate = f64::from(config.ws_per_second.max(1));
    let mut messages = Bucket::new(rate, rate, now);
    let presence_rate = f64::from(config.presence_per_second);
    let mut presence = Bucket::new(presence_rate, presence_rate, now);
    // Messages over the rate wait here, in order; five seconds' worth at most.
    let backlog_cap = 5 * config.ws_per_second.max(1) as usize;
    let mut backlog: VecDeque<Result<ClientMessage, Refusal>> = VecDeque::new();
    let mut told = false;
    loop {
        let wait = messages.wait(std::time::Instant::now());
        let next = tokio::select! {
            next = next_frame(stream, &session.outbox, liveness) => Some(next),
            _ = tokio::time::sleep(wait), if !backlog.is_empty() => None,
        };
        match next {
            Some(Next::Text(text)) if !session.outbox.is_closing() => {
                match protocol::parse(&text, &session.state.limits) {
                    Ok(ClientMessage::Presence(update)) => {
                        metrics()
                            .messages_received
                            .with_label_values(&["presence"])
                            .inc();
                        if presence.take(std::time::Instant::now()) {
                            let _ = room.tx.send(RoomCmd::Presence(session.outbox.id, update));
                        } else {
                            metrics().presence_dropped.inc();
                        }
                    }
                    other => backlog.push_back(other),
                }
            }
            Some(Next::Text(_)) | Some(Next::Skip) | None => {}
            Some(Next::End) => {
                drain_if_closing(stream, &session.outbox).await;
                return;
            }
        }
        while !backlog.is_empty() && messages.take(std::time::Instant::now()) {
            if let Some(message) = backlog.pop_front() {
                handle(session, &room, message);
            }
        }
        if backlog.is_empty() {
            told = false;
        } else if backlog.len() > backlog_cap {
            session
                .outbox
                .close(4013, "flooding: more than five seconds of messages waiting");
            backlog.clear();
        } else if !told {
            told = true;
            metrics().rate_limited.inc();
            session.outbox.send_text(protocol::notice(
                429,
                "too many messages: they wait in order and are handled at the allowed rate",
            ));
        }
    }
}

/// Handles one message after the rate limit let it through.
fn handle(session: &Session, room: &RoomHandle, message: Result<ClientMessage, Refusal>) {
    match message {
        Ok(ClientMessage::Patch(patch)) => {
            metrics()
                .messages_received
                .with_label_values(&["patch"])
                .inc();
            if room
                .tx
                .send(RoomCmd::Patch(session.outbox.id, patch))
                .is_err()
            {
                session.outbox.close(1012, "the room closed");
            }
        }
        Ok(ClientMessage::Presence(update)) => {
            let _ = room.tx.send(RoomCmd::Presence(session.outbox.id, update));
        }
        Ok(ClientMessage::Hello(_)) => refuse(
            &session.outbox,
            Refusal {
                id: None,
                code: "invalid",
                message: "hello was already said on this socket".into(),
            },
        ),
        Err(r) => refuse(&session.outbox, r),
    }
}

/// Completes once the node starts shutting down.
async fn stopped(mut stopping: tokio::sync::watch::Receiver<bool>) {
    loop {
        if *stopping.borrow_and_update() {
            return;
        }
        if stopping.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

fn refuse(outbox: &Outbox, refusal: Refusal) {
    metrics().rejects.with_label_values(&[refusal.code]).inc();
    outbox.send_text(protocol::reject(&refusal));
}

/// What the reader does with the next frame.
enum Next {
    Text(String),
    /// Nothing to handle (a ping, a pong).
    Skip,
    /// The socket is done reading.
    End,
}

/// Reads the next frame. After a protocol error (too big, invalid UTF-8...) yawc
/// has queued the matching close frame; one more read flushes it.
async fn next_frame(
    stream: &mut SplitStream<Frames>,
    outbox: &Outbox,
    liveness: &Liveness,
) -> Next {
    let next = stream.next().await;
    liveness.heard_now();
    let frame = match next {
        None => return Next::End,
        Some(Err(e)) => {
            tracing::debug!(error = %e, "socket read failed");
            let _ = timeout(CLOSE_DEADLINE, stream.next()).await;
            return Next::End;
        }
        Some(Ok(frame)) => frame,
    };
    tracing::debug!(opcode = ?frame.opcode(), len = frame.payload().len(), "frame");
    match frame.opcode() {
        OpCode::Text => {
            metrics()
                .bytes_received
                .inc_by(frame.payload().len() as u64);
            match std::str::from_utf8(frame.payload()) {
                Ok(text) => Next::Text(text.to_owned()),
                Err(_) => {
                    outbox.close(1007, "text frames must be valid UTF-8");
                    Next::End
                }
            }
        }
        OpCode::Binary => {
            outbox.close(1003, "binary frames are not accepted");
            Next::End
        }
        OpCode::Close => {
            // One more read sends yawc's answer to the client's close.
            let _ = timeout(CLOSE_DEADLINE, stream.next()).await;
            Next::End
        }
        _ => Next::Skip,
    }
}

/// Reads until the client closes, while our close frame is on its way.
async fn drain_if_closing(stream: &mut SplitStream<Frames>, outbox: &Outbox) {
    if outbox.is_closing() {
        drain(stream).await;
    }
}

async fn drain(stream: &mut SplitStream<Frames>) {
    while let Some(Ok(frame)) = stream.next().await {
        if frame.opcode() == OpCode::Close {
            break;
        }
    }
}

/// Signs the socket in and joins it to the file's room. The error is a close.
async fn join(session: &mut Session, hello: protocol::Hello) -> Result<(), (u16, &'static str)> {
    let state = session.state.clone();
    let account = match &hello.token {
        Some(token) => {
            let d = digest(token);
            match state.store.session_account(d).await {
                Ok(a) => {
                    session.token = Some(d);
                    Some(a)
                }
                Err(crate::store::StoreError::NotFound) => {
                    return Err((4001, "bad or signed-out token"))
                }
                Err(_) => return Err((1013, "the store is unavailable")),
            }
        }
        None => None,
    };
    if let Some(a) = &account {
        let counter = format!("sockets:{}", a.id);
        let limit = state.config.ws_per_account;
        match state
            .coordinator
            .count_up(&counter, &state.node, limit)
            .await
        {
            Ok(true) => session.account_slot = Some(counter),
            Ok(false) => return Err((4029, "too many sockets for this account")),
            // A coordinator outage must not lock everyone out: fail open, loudly.
            Err(e) => tracing::warn!(error = %e, "socket count unavailable; not enforced"),
        }
    }
    let client = ClientKey::of(&hello.client);
    let stored_op = match state.store.client_op(&session.file, client).await {
        Ok(op) => op.map_or(0, |(id, _)| id),
        Err(crate::store::StoreError::NotFound) => 0,
        Err(_) => return Err((1013, "the store is unavailable")),
    };
    let req = JoinRequest {
        outbox: session.outbox.clone(),
        client,
        account: account.map(|a| (a.id, a.name)),
        key: hello.key,
        name: hello.name,
        since: hello.since,
        stored_op,
    };
    // Registered before joining, so a sign-out racing the join still reaches it.
    if let Some(token) = session.token {
        state.sockets.add(token, session.outbox.clone());
    }
    match state.rooms.join(&session.file, req).await {
        Ok((room, _joined)) => {
            session.room = Some(room);
            Ok(())
        }
        Err(e) => Err((e.close_code(), e.reason())),
    }
}
