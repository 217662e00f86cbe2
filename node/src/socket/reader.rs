//! The reading half of a socket: the hello (within its deadline), the join,
//! then every message to the room, within the socket's rate limits.

mod delivery;
mod frames;
mod intake;
mod join;
mod messages;

use atrium_protocol::CloseCode;
use tokio::time::{timeout_at, Instant};

use self::frames::{drain, drain_if_closing, next_frame, stopped, Next};
use self::join::join;
use self::messages::serve_messages;
use super::{ReadIo, Session};
use crate::admission::{come_back_after, come_back_later, Outcome};
use crate::protocol::{self, ClientMessage, Refusal};
use crate::ws::Reader;

type Frames = Reader<ReadIo>;

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

pub async fn read(frames: &mut Frames, session: &mut Session) {
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
            next = timeout_at(deadline, next_frame(frames, session)) => next,
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
    // Boxed: the join's future is large (token checks, the coordinator) and runs once; in
    // place it would size every socket's task for its whole life (socket/tests.rs).
    if let Err((code, reason)) = Box::pin(join(session, hello)).await {
        Outcome::of_close(code).count(&session.state.metrics);
        if let Some(wait) = session.retry_after {
            session.outbox.close(code, &come_back_after(reason, wait));
        } else if code == CloseCode::TryAgainLater {
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
    serve_messages(frames, session, &room).await;
}
