//! The reading half of a socket: the hello (within its deadline), the join,
//! then every message to the room, within the socket's rate limits.

use atrium_protocol::CloseCode;
use std::collections::VecDeque;
use std::time::Duration;

use atrium_coordinator::CoordinatorError;
use tokio::time::{timeout_at, Instant};

use super::{Liveness, ReadIo, Session};
use crate::admission::{come_back_later, Outcome};
use crate::ids::{digest, ClientKey};
use crate::limits::Bucket;
use crate::outbox::Outbox;
use crate::protocol::{self, ClientMessage, Kind, Refusal};
use crate::room::access;
use crate::room::registry::RoomHandle;
use crate::room::{JoinError, JoinRequest, RoomCmd};
use crate::state::AppState;
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
async fn next_frame(frames: &mut Frames, session: &Session, liveness: &Liveness) -> Next {
    let outbox = &session.outbox;
    let next = frames.next().await;
    liveness.heard_now();
    match next {
        Ok(Incoming::Text(text)) => {
            session
                .state
                .metrics
                .bytes_received
                .inc_by(text.len() as u64);
            Next::Text(text)
        }
        Ok(Incoming::Binary) => {
            outbox.close(CloseCode::Unsupported, "binary frames are not accepted");
            Next::End
        }
        Ok(Incoming::Ping(payload)) => {
            outbox.send_control(crate::ws::frame::pong(&payload));
            Next::Skip
        }
        Ok(Incoming::Pong) => Next::Skip,
        Ok(Incoming::Close(code)) => {
            // Answer with the client's code (1000 when it gave none).
            outbox.echo_close(code.unwrap_or(CloseCode::Normal.code()));
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

fn refuse(session: &Session, refusal: Refusal) {
    let outbox = &session.outbox;
    debug_assert!(
        atrium_protocol::REJECT_CODES.contains(&refusal.code),
        "{}",
        refusal.code
    );
    session
        .state
        .metrics
        .rejects
        .with_label_values(&[refusal.code])
        .inc();
    outbox.send_text(protocol::reject(&refusal));
}

/// Messages before the hello that are not a hello: each gets a `reject`; more
/// than this closes with 4000, so a socket cannot be kept busy without saying hello.
const BEFORE_HELLO_REFUSALS: usize = 16;

pub async fn read(frames: &mut Frames, session: &mut Session, liveness: &Liveness) {
    if session.outbox.is_closing() {
        // Refused at the upgrade (too many sockets from this address).
        drain(frames).await;
        return;
    }
    let config = session.state.config.clone();
    let deadline = Instant::now() + config.hello_timeout();
    let stopping = session.state.stopping.clone();
    // Before hello: only a hello is accepted, small, until the deadline.
    frames.set_max_message(config.hello_max_bytes.min(config.max_message_bytes));
    let mut refusals = 0;
    let hello = loop {
        let next = tokio::select! {
            next = timeout_at(deadline, next_frame(frames, session, liveness)) => next,
            _ = stopped(stopping.clone()) => {
                session.outbox.close(CloseCode::ServiceRestart, "server restarting");
                drain(frames).await;
                return;
            }
        };
        let text = match next {
            Ok(Next::Text(text)) => text,
            Ok(Next::Skip) => continue,
            Ok(Next::End) => return drain_if_closing(frames, &session.outbox).await,
            Err(_) => {
                session.outbox.close(CloseCode::NoHello, "no hello in time");
                return drain(frames).await;
            }
        };
        let refusal = match protocol::parse(&text, &session.state.limits) {
            Ok(ClientMessage::Hello(hello)) => break hello,
            Ok(_) => Refusal::invalid_before_hello(),
            Err(r) => r,
        };
        refusals += 1;
        if refusals > BEFORE_HELLO_REFUSALS {
            session
                .outbox
                .close(CloseCode::NoHello, "the first message must be a hello");
            return drain(frames).await;
        }
        refuse(session, refusal);
    };
    frames.set_max_message(config.max_message_bytes);
    session
        .state
        .metrics
        .messages_received
        .with_label_values(&["hello"])
        .inc();
    if let Err((code, reason)) = join(session, hello).await {
        Outcome::of_close(code).count(&session.state.metrics);
        if code == CloseCode::TryAgainLater {
            session.outbox.close(code, &come_back_later(reason));
        } else {
            session.outbox.close(code, reason);
        }
        return drain(frames).await;
    }
    Outcome::Admitted.count(&session.state.metrics);
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

/// A message waiting for the socket's message rate. It is kept as the text that
/// came (parsed only when its turn comes), or, when it is already refused (a
/// viewer's patch, a malformed message), as the small refusal alone.
enum Waiting {
    Text(String),
    Refused(Refusal),
}

/// What a socket may have read and not yet handled, and how fast it may read.
///
/// Everything a socket makes the node hold is bounded here: messages over the
/// rate wait in order (one 429 notice), up to five seconds' worth (then 4013) and
/// at most `ATRIUM_WS_BACKLOG_BYTES` of text. At that bound, and while the socket
/// is over its byte rate (`ATRIUM_WS_BYTES_PER_SECOND`), the node stops reading it:
/// the rest waits in the client's own buffers, costing the node nothing.
struct Intake {
    messages: Bucket,
    bytes: Bucket,
    presence: Bucket,
    backlog: VecDeque<Waiting>,
    backlog_bytes: usize,
    max_backlog: usize,
    max_backlog_bytes: usize,
    told: bool,
}

impl Intake {
    fn new(config: &crate::config::NodeConfig) -> Self {
        let now = std::time::Instant::now();
        let rate = f64::from(config.ws_per_second.max(1));
        let presence_rate = f64::from(config.presence_per_second);
        let byte_rate = config.ws_bytes_per_second.max(1) as f64;
        let byte_burst = byte_rate.max(config.max_message_bytes as f64);
        Self {
            messages: Bucket::new(rate, rate, now),
            bytes: Bucket::new(byte_rate, byte_burst, now),
            presence: Bucket::new(presence_rate, presence_rate, now),
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            max_backlog: 5 * config.ws_per_second.max(1) as usize,
            max_backlog_bytes: config.ws_backlog_bytes.max(1),
            told: false,
        }
    }

    /// How long before the socket may be read again (zero: now).
    fn read_pause(&self, now: std::time::Instant) -> Option<Duration> {
        if self.backlog_bytes >= self.max_backlog_bytes {
            return Some(self.messages.wait(now));
        }
        let debt = self.bytes.debt(now);
        (!debt.is_zero()).then_some(debt)
    }

    fn push(&mut self, waiting: Waiting) {
        if let Waiting::Text(text) = &waiting {
            self.backlog_bytes += text.len();
        }
        self.backlog.push_back(waiting);
    }

    /// The next waiting message the rate lets through.
    fn pop(&mut self, now: std::time::Instant) -> Option<Waiting> {
        if self.backlog.is_empty() || !self.messages.take(now) {
            return None;
        }
        let waiting = self.backlog.pop_front()?;
        if let Waiting::Text(text) = &waiting {
            self.backlog_bytes -= text.len();
        }
        Some(waiting)
    }
}

/// After the join: every message to the room, within the socket's limits (see
/// [`Intake`]). Presence over its own rate is dropped.
async fn serve_messages(
    frames: &mut Frames,
    session: &Session,
    liveness: &Liveness,
    room: &RoomHandle,
) {
    let config = &session.state.config;
    let mut intake = Intake::new(config);
    let mut paused = false;
    let mut received = frames.received();
    loop {
        let now = std::time::Instant::now();
        let pause = intake.read_pause(now);
        if pause.is_some() && !paused {
            session.state.metrics.inbound_paused.inc();
        }
        paused = pause.is_some();
        let wait = match pause {
            Some(p) if intake.backlog.is_empty() => p,
            Some(p) => p.min(intake.messages.wait(now)),
            None => intake.messages.wait(now),
        };
        let next = tokio::select! {
            next = next_frame(frames, session, liveness), if pause.is_none() => Some(next),
            _ = tokio::time::sleep(wait), if pause.is_some() || !intake.backlog.is_empty() => None,
        };
        match next {
            Some(Next::Text(text)) if !session.outbox.is_closing() => {
                intake
                    .bytes
                    .charge(std::time::Instant::now(), text.len() as f64);
                let wire = frames.received() - received;
                received = frames.received();
                take_in(session, room, &mut intake, text, wire).await;
            }
            Some(Next::Text(_) | Next::Skip) | None => {}
            Some(Next::End) => return drain_if_closing(frames, &session.outbox).await,
        }
        while let Some(waiting) = intake.pop(std::time::Instant::now()) {
            match waiting {
                Waiting::Text(text) => handle_text(session, room, text).await,
                Waiting::Refused(r) => refuse(session, r),
            }
        }
        if intake.backlog.is_empty() {
            intake.told = false;
        } else if intake.backlog.len() > intake.max_backlog {
            session.outbox.close(
                CloseCode::Flooding,
                "flooding: more than five seconds of messages waiting",
            );
            intake.backlog.clear();
            intake.backlog_bytes = 0;
        } else if !intake.told {
            intake.told = true;
            session.state.metrics.rate_limited.inc();
            session.outbox.send_text(protocol::notice(
                429,
                "too many messages: they wait in order and are handled at the allowed rate",
            ));
        }
    }
}

/// One message just read: presence goes to the room at once (or is dropped over
/// its rate); anything else is handled now if the rate allows and nothing waits
/// before it, else it waits. A viewer's patch is refused from its id alone.
async fn take_in(
    session: &Session,
    room: &RoomHandle,
    intake: &mut Intake,
    text: String,
    wire: usize,
) {
    let message = match protocol::read(&text) {
        Ok(m) => m,
        Err(r) => return intake.push(Waiting::Refused(r)),
    };
    match message.kind {
        Kind::Presence => {
            session
                .state
                .metrics
                .messages_received
                .with_label_values(&["presence"])
                .inc();
            if !intake.presence.take(std::time::Instant::now()) {
                session.state.metrics.presence_dropped.inc();
                return;
            }
            match message.parse(&session.state.limits) {
                Ok(ClientMessage::Presence(mut update)) => {
                    update.wire_bytes = wire;
                    let _ = room.tx.send(RoomCmd::Presence(session.outbox.id, update));
                }
                Ok(_) => {}
                Err(r) => refuse(session, r),
            }
        }
        Kind::Patch => {
            if let Some((code, why)) = session.seat.refusal() {
                return intake.push(Waiting::Refused(message.refuse(code, why)));
            }
            if intake.backlog.is_empty() && intake.messages.take(std::time::Instant::now()) {
                // Nothing waits before it and the rate allows it: no queueing, one parse.
                if text.len() <= crate::lane::INLINE_BYTES {
                    let parsed = message.parse(&session.state.limits);
                    return to_room(session, room, parsed).await;
                }
                drop(message);
                return handle_text(session, room, text).await;
            }
            drop(message);
            intake.push(Waiting::Text(text));
        }
        Kind::Hello => intake.push(Waiting::Refused(Refusal {
            id: None,
            code: "invalid",
            message: "hello was already said on this socket".into(),
        })),
    }
}

/// Handles one message once the rate let it through (a large one parsed on the bulk
/// lane, so it never holds up the sockets that share this worker).
async fn handle_text(session: &Session, room: &RoomHandle, text: String) {
    let limits = session.state.limits.clone();
    let parsed = crate::lane::run(text.len(), &session.state.metrics, move || {
        protocol::parse(&text, &limits)
    })
    .await;
    // Its role may have changed while it waited: the room has the last word.
    to_room(session, room, parsed).await;
}

async fn to_room(session: &Session, room: &RoomHandle, message: Result<ClientMessage, Refusal>) {
    match message {
        Ok(ClientMessage::Patch(patch)) => {
            session
                .state
                .metrics
                .messages_received
                .with_label_values(&["patch"])
                .inc();
            // While the room is behind, this socket waits here and reads nothing.
            let ticket = room.inbound.admit(patch.ops_json.len()).await;
            if room
                .tx
                .send(RoomCmd::Patch(session.outbox.id, patch, ticket))
                .is_err()
            {
                session
                    .outbox
                    .close(CloseCode::ServiceRestart, "the room closed");
            }
        }
        Ok(_) => {}
        Err(r) => refuse(session, r),
    }
}

/// How long a socket over its account's cap waits for a slot before 4029. A person's
/// reconnecting tab (after a 1012 or a 4009) can arrive before the socket it replaces has given
/// its slot back, on this node or on the one it left; that must not look like an eleventh tab.
/// The old socket gives its slot back once its close handshake is over, which may take up to
/// `CLOSE_DEADLINE` (2 s), so the grace outlasts it.
const SLOT_GRACE: Duration = Duration::from_secs(3);

/// The longest pause between two asks for a slot.
const SLOT_ASK_EVERY: Duration = Duration::from_millis(500);

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
                wait = (wait * 2).min(SLOT_ASK_EVERY);
            }
            other => return other,
        }
    }
}

/// Signs the socket in and joins it to the file's room. The error is a close.
async fn join(
    session: &mut Session,
    hello: protocol::Hello,
) -> Result<(), (CloseCode, &'static str)> {
    let state = session.state.clone();
    let account = match &hello.token {
        Some(token) => {
            let d = digest(token);
            // Registered for sign-out before the token is checked: a sign-out at any
            // moment after this either fails the check or closes this socket.
            state.sockets.add(d, session.outbox.clone());
            session.token = Some(d);
            match state.store.session_account(d).await {
                Ok(a) => Some(a),
                Err(StoreError::NotFound) => {
                    return Err((CloseCode::Unauthorized, "bad or signed-out token"))
                }
                Err(_) => return Err((CloseCode::TryAgainLater, "the store is unavailable")),
            }
        }
        None => None,
    };
    // A refused joiner costs a lookup, never a room: the file and the access it
    // gives are checked before a room is opened, a lease taken or a document read.
    let open = state.rooms.existing(&session.file).is_some();
    if !open {
        if !state.memory.admits() {
            session.state.metrics.memory_refusals.inc();
            return Err((
                CloseCode::TryAgainLater,
                "the node is at its memory budget; try again later",
            ));
        }
        match state.store.file(&session.file).await {
            Ok(record) => {
                let account_id = account.as_ref().map(|a| &a.id);
                access::access(&record, account_id, hello.key.as_deref())
                    .and_then(|a| access::role(&record, a))
                    .map_err(|d| {
                        let e = JoinError::Denied(d);
                        (e.close_code(), e.reason())
                    })?;
            }
            Err(StoreError::NotFound) => return Err((CloseCode::NotFound, "file not found")),
            Err(_) => return Err((CloseCode::TryAgainLater, "the store is unavailable")),
        }
    }
    if let Some(a) = &account {
        let counter = format!("sockets:{}", a.id);
        match account_slot(&state, &counter).await {
            Ok(true) => session.account_slot = Some(counter),
            Ok(false) => {
                return Err((
                    CloseCode::TooManySockets,
                    "too many sockets for this account",
                ))
            }
            // A coordinator outage must not lock everyone out: fail open, loudly.
            Err(e) => tracing::warn!(error = %e, "socket count unavailable; not enforced"),
        }
    }
    // A turn bounds the work of joining (the client's op id, the room's load), so a
    // storm is taken at the pace the node carries; it is taken only now, so a hello
    // waiting for its account's slot above never holds one. The next waiting join goes
    // once this one is in its room.
    let _turn = state.admission.admit().await.ok_or((
        CloseCode::TryAgainLater,
        "the node is busy with other joins",
    ))?;
    let client = ClientKey::of(&hello.client);
    let stored_op = match state.store.client_op(&session.file, client).await {
        Ok(op) => op.map_or(0, |(id, _)| id),
        Err(StoreError::NotFound) => 0,
        Err(_) => return Err((CloseCode::TryAgainLater, "the store is unavailable")),
    };
    let req = JoinRequest {
        outbox: session.outbox.clone(),
        client,
        account: account.map(|a| (a.id, a.name)),
        key: hello.key,
        name: hello.name,
        since: hello.since,
        stored_op,
        seat: session.seat.clone(),
    };
    if session.outbox.is_closing() {
        // Signed out (or replaced) while waiting for a slot: never welcomed.
        return Err((CloseCode::Unauthorized, "signed out"));
    }
    match state.rooms.join(&session.file, req).await {
        Ok((room, _joined)) => {
            session.room = Some(room);
            Ok(())
        }
        Err(e) => Err((e.close_code(), e.reason())),
    }
}
