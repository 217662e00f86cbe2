//! An account's socket slots: `ATRIUM_WS_PER_ACCOUNT` sockets across the fleet, counted
//! by the coordinator per node. A socket takes one at its hello and gives it back when it
//! ends.

use std::sync::Arc;
use std::time::Duration;

use atrium_coordinator::CoordinatorError;

use crate::state::AppState;

/// How long a socket over its account's cap keeps asking for a slot before 4029. A person's
/// reconnecting tab (after a 1012 or a 4009) can arrive before the socket it replaces has given
/// its slot back, on this node or on the one it left; that must not look like an eleventh tab.
/// The old socket gives its slot back once its close handshake is over, which may take up to
/// `CLOSE_DEADLINE` (2 s), so the grace outlasts it.
const GRACE: Duration = Duration::from_secs(3);

/// The longest pause between two asks for a slot.
const ASK_EVERY: Duration = Duration::from_millis(500);

/// How many times a slot's return is asked for before it is left to the node's membership.
const GIVE_BACK_TRIES: u32 = 8;

/// The longest pause between two tries at giving a slot back.
const GIVE_BACK_EVERY: Duration = Duration::from_secs(4);

/// The fleet-wide counter of an account's sockets.
pub(super) fn counter(account: &impl std::fmt::Display) -> String {
    format!("sockets:{account}")
}

/// Takes one of the account's slots, asking again with backoff while they are all held,
/// for [`GRACE`] of waiting. The grace is the sum of the pauses rather than a deadline on
/// the clock, so a node whose clock jumps still waits as long for a reconnecting tab's slot.
pub(super) async fn take(state: &AppState, counter: &str) -> Result<bool, CoordinatorError> {
    let limit = state.config.ws_per_account;
    let mut waited = Duration::ZERO;
    let mut wait = Duration::from_millis(50);
    loop {
        match state
            .coordinator
            .count_up(counter, &state.node, limit)
            .await
        {
            Ok(false) if limit > 0 && waited + wait < GRACE => {
                tokio::time::sleep(wait).await;
                waited += wait;
                wait = (wait * 2).min(ASK_EVERY);
            }
            other => return other,
        }
    }
}

/// Gives a slot back. A return that fails (the coordinator restarting, or a request that
/// timed out) would leave the slot counted for as long as this node stays a member, the
/// account a tab short each time, so it is asked again with backoff in the background for
/// about twenty seconds. Past that, only the node's end frees it.
pub(super) async fn give_back(state: &Arc<AppState>, counter: String) {
    let Err(e) = state.coordinator.count_down(&counter, &state.node).await else {
        return;
    };
    tracing::warn!(error = %e, "could not give back an account socket slot; asking again");
    let state = state.clone();
    tokio::spawn(async move {
        let mut wait = Duration::from_millis(250);
        for _ in 1..GIVE_BACK_TRIES {
            tokio::time::sleep(wait).await;
            match state.coordinator.count_down(&counter, &state.node).await {
                Ok(()) => {
                    tracing::info!("an account socket slot was given back late");
                    return;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "an account socket slot still not given back")
                }
            }
            wait = (wait * 2).min(GIVE_BACK_EVERY);
        }
        tracing::error!(
            tries = GIVE_BACK_TRIES,
            "an account socket slot could not be given back; it counts until this node leaves"
        );
    });
}
