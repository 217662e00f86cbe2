//! One WebSocket, from upgrade to close.
//!
//! A socket is one task running three things side by side: the [reader]
//! (hello, then messages to the room, within the rate limits), the [writer]
//! (the outbox drained in batches, pings, the close frame), and a watchdog that
//! closes a socket the client stopped answering. Sockets count against their
//! address from the upgrade and against their account from the hello.

mod account_slots;
mod io;
mod reader;
mod writer;

use atrium_protocol::CloseCode;
use std::sync::Arc;
use std::time::Duration;

use hyper::upgrade::Upgraded;
use tokio::time::timeout;

use self::io::{split, ReadIo, WriteIo};

use crate::ids::FileId;
use crate::limits::AddressSlot;
use crate::memory::SocketAllowance;
use crate::outbox::{outbox, Outbox};
use crate::room::access::Seat;
use crate::room::registry::RoomHandle;
use crate::room::RoomCmd;
use crate::state::AppState;
use crate::ws::{Liveness, Reader, ReaderLimits};

/// How long the final flush and close of a socket may take.
const CLOSE_DEADLINE: Duration = Duration::from_secs(2);

/// Where a socket is in its life.
struct Session {
    state: Arc<AppState>,
    file: FileId,
    outbox: Outbox,
    room: Option<RoomHandle>,
    token: Option<[u8; 32]>,
    /// The `sub` of the app token the socket said hello with (its refreshes must match).
    app_sub: Option<String>,
    /// The fleet-wide counter this socket holds a slot of (sockets per account).
    account_slot: Option<String>,
    /// Its role, as the room last told it.
    seat: Seat,
    /// When a refused join knows how long the client must wait (its `retry-ms`).
    retry_after: Option<Duration>,
}

/// Serves one upgraded socket until it closes.
pub async fn serve(
    upgraded: Upgraded,
    deflate: bool,
    file: FileId,
    state: Arc<AppState>,
    address_slot: Option<AddressSlot>,
) {
    let metrics = state.metrics.clone();
    metrics.connections.inc();
    let config = state.config.clone();
    let (out, mut rx) = outbox(config.send_queue, config.send_queue_bytes, metrics.clone());
    if let Some(slot) = &address_slot {
        out.set_address(slot.address());
    }
    if address_slot.is_none() {
        out.close(
            CloseCode::TooManySockets,
            "too many sockets from this address",
        );
    }
    // A socket that takes nothing of what it is sent for as long as one that says nothing
    // may stay (`ATRIUM_PING_TIMEOUT_MS`) is given up.
    let (read_io, mut write_io, socket) = split(upgraded, config.ping_timeout(), &out);
    if let Some(socket) = socket {
        out.attach(socket, deflate);
    }
    let limits = ReaderLimits {
        max_message: config.max_message_bytes,
        fragment_timeout: config.hello_timeout(),
        inflate_ratio: config.ws_inflate_ratio,
    };
    let mut frames = Reader::new(read_io, limits, deflate);
    match &address_slot {
        Some(slot) => frames.set_allowance(Arc::new(SocketAllowance {
            memory: state.memory.clone(),
            shares: state.incoming_by_address.clone(),
            address: slot.address(),
            share: SocketAllowance::share_of(state.memory.budget()),
        })),
        None => frames.set_allowance(state.memory.clone()),
    }
    let mut session = Session {
        state,
        file,
        outbox: out.clone(),
        room: None,
        token: None,
        app_sub: None,
        account_slot: None,
        seat: Seat::default(),
        retry_after: None,
    };
    let liveness = Arc::new(Liveness::new());
    frames.set_liveness(liveness.clone());
    {
        let reading = reader::read(&mut frames, &mut session);
        let writing = writer::write(
            &mut write_io,
            &mut rx,
            deflate,
            config.ping_interval(),
            &metrics,
        );
        tokio::pin!(reading, writing);
        tokio::select! {
            _ = &mut writing => {
                // Our close frame is out: read until the client answers it, briefly,
                // so unread bytes do not turn the close into a reset.
                let _ = timeout(CLOSE_DEADLINE, &mut reading).await;
            }
            _ = &mut reading => {
                if out.is_closing() {
                    let _ = timeout(CLOSE_DEADLINE, &mut writing).await;
                }
            }
            _ = liveness.silence(config.ping_timeout()) => {
                // Nothing heard while listening, not even a pong: the peer is gone or stuck.
                tracing::debug!("socket stopped answering; closing");
                out.close(CloseCode::GoingAway, "no answer to pings");
                let _ = timeout(CLOSE_DEADLINE, &mut writing).await;
            }
        }
    }
    // Senders may not write to a socket that is ending.
    rx.detach();
    finish(&session).await;
    drop(address_slot);
    metrics.connections.dec();
}

/// Leaves the room and gives back what the socket held.
async fn finish(session: &Session) {
    if let Some(room) = &session.room {
        let _ = room.tx.send(RoomCmd::Leave(session.outbox.id));
    }
    let state = &session.state;
    if let Some(token) = session.token {
        state.sockets.remove(token, session.outbox.id);
    }
    if session.app_sub.is_some() {
        state.app_sockets.remove(session.outbox.id);
    }
    if let Some(counter) = &session.account_slot {
        account_slots::give_back(state, counter.clone()).await;
    }
}

#[cfg(test)]
mod tests;
