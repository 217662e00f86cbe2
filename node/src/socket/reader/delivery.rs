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
        Ok(_) => {}
        Err(r) => refuse(session, r),
    }
}
