//! Handing a message to the room: parsed (a large one on the bulk lane), counted,
//! and sent; a patch waits here while the room is behind.

use atrium_protocol::CloseCode;

use super::{refuse, Session};
use crate::protocol::{self, ClientMessage, Refusal};
use crate::room::registry::RoomHandle;
use crate::room::RoomCmd;

/// Handles one message once the rate let it through (a large one parsed on the bulk
/// lane, so it never holds up the sockets that share this worker).
pub(super) async fn handle_text(session: &Session, room: &RoomHandle, text: String) {
    let limits = session.state.limits.clone();
    let parsed = crate::lane::run(text.len(), &session.state.metrics, move || {
        protocol::parse(&text, &limits)
    })
    .await;
    // Its role may have changed while it waited: the room has the last word.
    to_room(session, room, parsed).await;
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

pub(super) async fn to_room(
    session: &Session,
    room: &RoomHandle,
    message: Result<ClientMessage, Refusal>,
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
        // Boxed, as the join is: a rare step whose large future every socket would carry.
        Ok(ClientMessage::Refresh(token)) => Box::pin(refresh(session, room, &token)).await,
        Ok(_) => {}
        Err(r) => refuse(session, r),
    }
}
