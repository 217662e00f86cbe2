//! The node's part in a fleet, driven by the coordinator's events:
//!
//! - fleet-wide sign-outs: a sign-out on any node closes the token's sockets here;
//! - lease hand-overs: a file served here whose lease another node took has its lease
//!   checked at once (leases hang on membership and are not renewed, so this is how a
//!   room learns quickly that it lost its file);
//! - rebalancing: when the ring of live, non-draining nodes changes, rooms whose
//!   ring owner is now another node are moved there (finish what is in flight,
//!   release the lease, close with 4009 so clients come back through the router),
//!   at most `ATRIUM_REBALANCE_PER_SECOND` a second, so load spreads without a
//!   thundering herd.
//!
//! A single node with the in-memory coordinator runs the same code; its ring only
//! ever holds itself, so nothing moves.

mod deletions;
pub mod rooms;
mod signouts;

pub use deletions::{announce_deleted, FILES_DELETED};

pub use signouts::{
    announce_revocation, announce_signout, announce_signouts, apply_revocation, APP_REVOKE, SIGNOUT,
};

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::{CoordinatorEvent, Member, NodeId, Ring};
use tokio::sync::broadcast::error::RecvError;

use self::signouts::signout_digests;
use crate::ids::FileId;
use crate::room::RoomCmd;
use crate::state::AppState;

/// Follows the coordinator until the node stops.
pub async fn run(state: Arc<AppState>) {
    let mut events = match state.coordinator.watch().await {
        Ok(events) => events,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch the coordinator; no rebalancing or fleet sign-outs");
            return;
        }
    };
    let mut ring_members: BTreeSet<NodeId> = BTreeSet::new();
    let mut moves: VecDeque<FileId> = VecDeque::new();
    let per_second = state.config.rebalance_per_second.max(1);
    let mut pace = tokio::time::interval(Duration::from_secs(1) / per_second);
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping = state.stopping.clone();
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(CoordinatorEvent::Message { topic, payload }) if topic == SIGNOUT => {
                    for digest in signout_digests(&payload) {
                        state.sockets.sign_out(digest);
                    }
                }
                Ok(CoordinatorEvent::Message { topic, payload }) if topic == APP_REVOKE => {
                    match serde_json::from_slice::<crate::apptoken::Revocation>(&payload) {
                        Ok(r) => {
                            apply_revocation(&state, &r);
                        }
                        Err(e) => tracing::warn!(error = %e, "unreadable revocation from the fleet"),
                    }
                }
                Ok(CoordinatorEvent::Message { topic, payload }) if topic == FILES_DELETED => {
                    deletions::apply_deleted(&state, deletions::deleted_ids(&payload));
                }
                Ok(CoordinatorEvent::MembersChanged(members)) => {
                    let live = serving(&members);
                    // Only a changed ring moves files: the periodic refresh must not
                    // move again a file a client brought back here.
                    if live != ring_members {
                        state.metrics.ring_members.set(live.len() as i64);
                        ring_members = live;
                        moves = misplaced(&state, &ring_members);
                        if !moves.is_empty() {
                            tracing::info!(files = moves.len(), "ring changed; moving files to their owners");
                        }
                    }
                }
                Ok(CoordinatorEvent::LeaseChanged { file, holder: Some(holder) }) if holder != state.node => {
                    let room = FileId::parse(&file).and_then(|f| state.rooms.existing(&f));
                    if let Some(room) = room {
                        let _ = room.tx.send(RoomCmd::CheckLease);
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(n)) => tracing::warn!(missed = n, "coordinator events lagged"),
                Err(RecvError::Closed) => return,
            },
            _ = pace.tick(), if !moves.is_empty() => {
                if let Some(file) = moves.pop_front() {
                    if let Some(room) = state.rooms.existing(&file) {
                        let _ = room.tx.send(RoomCmd::Move);
                    }
                }
            }
            _ = stopping.changed() => return,
        }
    }
}

/// The nodes that take new work: live and not draining.
fn serving(members: &[Member]) -> BTreeSet<NodeId> {
    members
        .iter()
        .filter(|m| !m.draining)
        .map(|m| m.id.clone())
        .collect()
}

/// Rooms of this node whose ring owner is another node.
fn misplaced(state: &AppState, members: &BTreeSet<NodeId>) -> VecDeque<FileId> {
    if !members.contains(&state.node) {
        // Draining, or not (yet) seen live: handing files over is the drain's job.
        return VecDeque::new();
    }
    let ring = Ring::new(members.iter());
    state
        .rooms
        .files()
        .into_iter()
        .filter(|f| {
            ring.owner(f.as_str())
                .is_some_and(|owner| owner != state.node)
        })
        .collect()
}

#[cfg(test)]
mod tests;
