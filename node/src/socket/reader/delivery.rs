//! Handing a message to the room: parsed (a large one on the bulk lane), counted,
//! and sent; a patch waits here while the room is behind.

use atrium_protocol::CloseCode;

use super::{refuse, Session};
use crate::memory::ParseCost;
use crate::protocol::{self, ClientMessage, Refusal};
use crate::room::registry::RoomHandle;
use crate::room::RoomCmd;

/// Handles one message once the rate let it through (a large one parsed on the bulk
/// lane, so it never holds up the sockets that share this worker). What its parse may
/// cost is asked of the memory budget when the parse starts, not while it waits for the
/// lane: many sockets' patches waiting their turn would otherwise hold promises for
/// memory that only one parse at a time uses (the sixth review kept a node at its mark
/// with a third of its budget used).
pub(super) async fn handle_text(session: &Session, room: &RoomHandle, text: String) {
    let limits = session.state.limits.clone();
    let memory = session.state.memory.clone();
    let work = crate::lane::run(text.len(), &session.state.metrics, move || {
        match memory.admits_parse(&text) {
            Some(cost) => Ok((protocol::parse(&text, &limits), cost)),
            None => {
                Err(protocol::read(&text).map(|m| m.refuse("too-large", crate::memory::AT_BUDGET)))
            }
        }
    });
    match work.await {
        // Its role may have changed while it waited: the room has the last word.
        Ok((parsed, cost)) => to_room(session, room, parsed, cost).await,
        Err(refusal) => {
            session.state.metrics.memory_refusals.inc();
            refuse(session, refusal.unwrap_or_else(|r| r));
        }
    }
}

/// A fresh app token for the socket: same `sub`, verified like a hello's. The room
/// applies its grant on this file and answers `refreshed` (or closes 4003); a token that
/// fails is refused with `bad-token` and the socket keeps the one it had until its `exp`.
async fn refresh(session: &Session, room: &RoomHandle, token: &str) {
    let state = &session.state;
    state
        .metrics
        .messages_received
        .with_label_values(&["refresh"])
        .inc();
    let bad = |message: &str| Refusal {
        id: None,
        code: "bad-token",
        message: message.into(),
    };
    let Some(sub) = &session.app_sub else {
        return refuse(
            session,
            bad("refresh is for sockets opened with an app token"),
        );
    };
    if !crate::apptoken::is_app_token(token) {
        return refuse(session, bad("not an app token"));
    }
    let claims = match state.app_tokens.verify(token).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(error = %e, "app token refused at refresh");
            return refuse(session, bad("bad or expired app token"));
        }
    };
    if &claims.sub != sub {
        return refuse(
            session,
            bad("a refresh must carry a token of the same `sub`"),
        );
    }
    state.app_sockets.track(&session.outbox, &claims);
    let _ = room.tx.send(RoomCmd::Regrant {
        conn: session.outbox.id,
        grant: claims.level(&session.file),
        exp: claims.exp,
    });
}

/// A parsed message to its room; a patch takes its parse's cost along (given back once it
/// is refused, or applied and durable), anything else drops it here.
pub(super) async fn to_room(
    session: &Session,
    room: &RoomHandle,
    message: Result<ClientMessage, Refusal>,
    cost: ParseCost,
) {
    match message {
        Ok(ClientMessage::Patch(patch)) => {
            session
                .state
                .metrics
                .messages_received
                .with_label_values(&["patch"])
                .inc();
            // While the room is behind, this socket waits here and reads nothing.
            let mut ticket = room.inbound.admit(patch.ops_json.len()).await;
            ticket.hold(cost);
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
        // Boxed, as the join is: a rare step whose large future every socket would carry.
        Ok(ClientMessage::Refresh(token)) => Box::pin(refresh(session, room, &token)).await,
        Ok(_) => {}
        Err(r) => refuse(session, r),
    }
}
