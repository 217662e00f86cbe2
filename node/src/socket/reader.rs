//! The reading half of a socket: the hello (within its deadline), the join,
//! then every message to the room, within the socket's rate limits.

use std::collections::VecDeque;
use std::time::Duration;

use atrium_coordinator::CoordinatorError;
use tokio::time::{timeout_at, Instant};

use super::{Liveness, ReadIo, Session};
use crate::ids::{digest, ClientKey};
use crate::limits::Bucket;
use crate::metrics::metrics;
use crate::outbox::Outbox;
use crate::protocol::{self, ClientMessage, Refusal};
use crate::room::registry::RoomHandle;
use crate::room::{JoinRequest, RoomCmd};
use crate::server::AppState;
use crate::store::StoreError;
use crate::ws::{Incoming, ReadError, Reader};

type Frames = Reader<ReadIo>;

/// What the reader does with the next frame.
enum Next {
    Text(String),
    /// Nothing to handle (a ping, a pong).
    Skip,
    /// The socket is done reading.
    End,
}

/// Reads the next frame, answering pings and protocol errors on the way.
async fn next_frame(frames: &mut Frames, outbox: &Outbox, liveness: &Liveness) -> Next {
    let next = frames.next().await;
    liveness.heard_now();
    match next {
        Ok(Incoming::Text(text)) => {
            metrics().bytes_received.inc_by(text.len() as u64);
            Next::Text(text)
        }
        Ok(Incoming::Binary) => {
            outbox.close(1003, "binary frames are not accepted");
            Next::End
        }
        Ok(Incoming::Ping(payload)) => {
            outbox.send_control(crate::ws::frame::pong(&payload));
            Next::Skip
        }
        Ok(Incoming::Pong) => Next::Skip,
        Ok(Incoming::Close(code)) => {
            // Answer with the client's code (1000 when it gave none).
            outbox.echo_close(code.unwrap_or(1000));
            Next::End
        }
        Err(ReadError::Closed | ReadError::Io(_)) => Next::End,
        Err(e) => {
            if let Some(code) = e.close_code() {
                outbox.close(code, &e.to_string());
            }
            Next::End
        }
    }
}

/// Reads until the client's close (or the connection's end) while our close
/// frame is on its way.
async fn drain(frames: &mut Frames) {
    while let Ok(incoming) = frames.next().await {
        if matches!(incoming, Incoming::Close(_)) {
            break;
        }
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

pub async fn read(frames: &mut Frames, session: &mut Session, liveness: &Liveness) {
    if session.outbox.is_closing() {
        // Refused at the upgrade (too many sockets from this address).
        drain(frames).await;
        return;
    }
    let deadline = Instant::now() + session.state.config.hello_timeout();
    let stopping = session.state.stopping.clone();
    // Before hello: only a hello is accepted, until the deadline.
    let hello = loop {
        let next = tokio::select! {
            next = timeout_at(deadline, next_frame(frames, &session.outbox, liveness)) => next,
            _ = stopped(stopping.clone()) => {
                session.outbox.close(1012, "server restarting");
                drain(frames).await;
                return;
            }
        };
        let text = match next {
            Ok(Next::Text(text)) => text,
            Ok(Next::Skip) => continue,
            Ok(Next::End) => return drain_if_closing(frames, &session.outbox).await,
            Err(_) => {
                session.outbox.close(4000, "no hello in time");
                return drain(frames).await;
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
    if let Err((code, reason)) = join(session, hello).await {
        session.outbox.close(code, reason);
        return drain(frames).await;
    }
    let Some(room) = session.room.clone() else {
        return;
    };
    serve_messages(frames, session, liveness, &room).await;
}

async fn drain_if_closing(frames: &mut Frames, outbox: &Outbox) {
    if outbox.is_closing() {
        drain(frames).await;
    }
}

/// After the join: every message to the room. Non-presence messages over the
/// rate wait in order (with one 429 notice); more than five seconds' worth
/// waiting closes 4013. Presence over its own rate is dropped.
async fn serve_messages(
    frames: &mut Frames,
    session: &Session,
    liveness: &Liveness,
    room: &RoomHandle,
) {
    let config = &session.state.config;
    let now = std::time::Instant::now();
    let rate = f64::from(config.ws_per_second.max(1));
    let mut messages = Bucket::new(rate, rate, now);
    let presence_rate = f64::from(config.presence_per_second);
    let mut presence = Bucket::new(presence_rate, presence_rate, now);
    let backlog_cap = 5 * config.ws_per_second.max(1) as usize;
    let mut backlog: VecDeque<Result<ClientMessage, Refusal>> = VecDeque::new();
    let mut told = false;
    loop {
        let wait = messages.wait(std::time::Instant::now());
        let next = tokio::select! {
            next = next_frame(frames, &session.outbox, liveness) => Some(next),
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
            Some(Next::Text(_) | Next::Skip) | None => {}
            Some(Next::End) => return drain_if_closing(frames, &session.outbox).await,
        }
        while !backlog.is_empty() && messages.take(std::time::Instant::now()) {
            if let Some(message) = backlog.pop_front() {
                handle(session, room, message);
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

/// How long a socket over its account's cap waits for a slot before 4029. A person's
/// reconnecting tab (after a 1012 or a 4009) can arrive before the socket it replaces has given
/// its slot back, on this node or on the one it left; that must not look like an eleventh tab.
const SLOT_GRACE: Duration = Duration::from_secs(1);

/// Takes one of the account's fleet-wide socket slots, asking again with backoff within
/// [`SLOT_GRACE`] while they are all held.
async fn account_slot(state: &AppState, counter: &str) -> Result<bool, CoordinatorError> {
    let limit = state.config.ws_per_account;
    let deadline = Instant::now() + SLOT_GRACE;
    let mut wait = Duration::from_millis(50);
    loop {
        match state
            .coordinator
            .count_up(counter, &state.node, limit)
            .await
        {
            Ok(false) if limit > 0 && Instant::now() + wait < deadline => {
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
            other => return other,
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
                Err(StoreError::NotFound) => return Err((4001, "bad or signed-out token")),
                Err(_) => return Err((1013, "the store is unavailable")),
            }
        }
        None => None,
    };
    if let Some(a) = &account {
        let counter = format!("sockets:{}", a.id);
        match account_slot(&state, &counter).await {
            Ok(true) => session.account_slot = Some(counter),
            Ok(false) => return Err((4029, "too many sockets for this account")),
            // A coordinator outage must not lock everyone out: fail open, loudly.
            Err(e) => tracing::warn!(error = %e, "socket count unavailable; not enforced"),
        }
    }
    let client = ClientKey::of(&hello.client);
    let stored_op = match state.store.client_op(&session.file, client).await {
        Ok(op) => op.map_or(0, |(id, _)| id),
        Err(StoreError::NotFound) => 0,
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
