//! After the join: every message to the room, within the socket's rate limits.

use super::delivery::{handle_text, to_room};
use super::frames::{drain_if_closing, next_frame, Next};
use super::intake::{Intake, Waiting};
use super::{refuse, Frames, Session};
use crate::protocol::{self, ClientMessage, Kind, Message, Refusal};
use crate::room::registry::RoomHandle;
use crate::room::server::Event;
use crate::room::RoomCmd;

/// After the join: every message to the room, within the socket's limits (see
/// [`Intake`]). Presence over its own rate is dropped.
pub(super) async fn serve_messages(frames: &mut Frames, session: &Session, room: &RoomHandle) {
    let mut intake = Intake::new(session);
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
            next = next_frame(frames, session), if pause.is_none() => Some(next),
            _ = tokio::time::sleep(wait), if pause.is_some() || !intake.backlog.is_empty() => None,
        };
        match next {
            Some(Next::Text(text)) if !session.outbox.is_closing() => {
                intake.charge(text.len());
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
        intake.check_backlog(session);
    }
}

/// One message just read: presence goes to the room's inbox for its next tick (or is
/// dropped over its rate); anything else is handled now if the rate allows and nothing waits
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
                    if room.presences.put(session.outbox.id, update) {
                        let _ = room.tx.send(RoomCmd::PresenceWaiting);
                    }
                }
                Ok(_) => {}
                Err(r) => refuse(session, r),
            }
        }
        Kind::Event => take_event(session, room, intake, &message),
        Kind::Patch | Kind::Refresh => {
            if let (Kind::Patch, Some((code, why))) = (message.kind, session.seat.refusal()) {
                return intake.push(Waiting::Refused(message.refuse(code, why)));
            }
            if intake.backlog.is_empty() && intake.messages.take(std::time::Instant::now()) {
                // Nothing waits before it and the rate allows it: no queueing, one parse.
                if text.len() <= crate::lane::INLINE_BYTES {
                    let Some(cost) = session.state.memory.admits_parse(&text) else {
                        return refuse(session, at_budget(session, &message));
                    };
                    let parsed = message.parse(&session.state.limits);
                    return to_room(session, room, parsed, cost).await;
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

/// A large patch met at the memory budget, before it is parsed: parsed JSON can cost many
/// times its text, and parsed patches wait for their room (the room refuses the same way
/// once they are parsed, as their ops would make the document grow).
fn at_budget(session: &Session, message: &Message<'_>) -> Refusal {
    session.state.metrics.memory_refusals.inc();
    message.refuse("too-large", crate::memory::AT_BUDGET)
}

/// A broadcast event: to everyone else in the file at once, or dropped over the socket's
/// event rate (as presence is); never stored. Viewers may send them too (a reaction is
/// not an edit). `data` larger than `ATRIUM_EVENT_MAX_BYTES` is refused with `too-large`.
fn take_event(session: &Session, room: &RoomHandle, intake: &mut Intake, message: &Message<'_>) {
    let state = &session.state;
    state
        .metrics
        .messages_received
        .with_label_values(&["event"])
        .inc();
    if !intake.events.take(std::time::Instant::now()) {
        state.metrics.events_dropped.inc();
        return;
    }
    let max = state.config.event_max_bytes;
    let too_large = || Refusal {
        id: None,
        code: "too-large",
        message: format!("an event's `data` is at most {max} bytes of JSON"),
    };
    // Parsed JSON costs many times its text: `data` far over the bound (more than
    // whitespace could explain) is refused unread.
    if message.raw_len("data").is_some_and(|n| n > 4 * max) {
        return refuse(session, too_large());
    }
    match message.parse(&state.limits) {
        Ok(ClientMessage::Event(data)) if data.len() > max => refuse(session, too_large()),
        Ok(ClientMessage::Event(data)) => {
            let event = Event::Socket {
                conn: session.outbox.id,
                data,
            };
            let _ = room.tx.send(RoomCmd::Event(event));
        }
        Ok(_) => {}
        Err(r) => refuse(session, r),
    }
}
