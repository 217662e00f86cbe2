//! Fleet-wide sign-outs: a session's end announced to every node through the
//! coordinator, and read back from its messages.

use crate::state::AppState;

/// The topic sign-outs travel on; the payload is the token's SHA-256 digest.
pub const SIGNOUT: &str = "signout";

/// Tells every node (this one included) that a session ended.
pub async fn announce_signout(state: &AppState, token_digest: [u8; 32]) {
    if let Err(e) = state
        .coordinator
        .publish(SIGNOUT, token_digest.to_vec())
        .await
    {
        tracing::warn!(error = %e, "could not announce a sign-out to the fleet");
    }
}

/// The topic app-token revocations travel on; the payload is the revocation as JSON.
pub const APP_REVOKE: &str = "app-revoke";

/// Applies a revocation here: remembered (new hellos and refreshes fail) and the
/// sockets it covers closed with 4001. Returns how many closed.
pub fn apply_revocation(state: &AppState, r: &crate::apptoken::Revocation) -> usize {
    state.app_tokens.revocations().add(r);
    state.app_sockets.revoke(r)
}

/// Tells every node (this one included) of a revocation.
pub async fn announce_revocation(state: &AppState, r: &crate::apptoken::Revocation) {
    let payload = serde_json::to_vec(r).unwrap_or_default();
    if let Err(e) = state.coordinator.publish(APP_REVOKE, payload).await {
        tracing::warn!(error = %e, "could not announce a revocation to the fleet");
    }
}

/// Digests per sign-out message of [`announce_signouts`] (1 KiB payloads).
const DIGESTS_PER_MESSAGE: usize = 32;

/// Tells every node that these sessions ended (all of an account's, say): the
/// digests go out concatenated, 32 to a message. (A node older than this reads
/// only single-digest messages; one session still travels exactly as before.)
pub async fn announce_signouts(state: &AppState, digests: &[[u8; 32]]) {
    for chunk in digests.chunks(DIGESTS_PER_MESSAGE) {
        if let Err(e) = state.coordinator.publish(SIGNOUT, chunk.concat()).await {
            tracing::warn!(error = %e, "could not announce sign-outs to the fleet");
        }
    }
}

/// The session digests of a sign-out message: one or more, 32 bytes each.
pub(super) fn signout_digests(payload: &[u8]) -> impl Iterator<Item = [u8; 32]> + '_ {
    let whole = !payload.is_empty() && payload.len().is_multiple_of(32);
    payload
        .chunks_exact(32)
        .take(if whole { usize::MAX } else { 0 })
        .filter_map(|c| <[u8; 32]>::try_from(c).ok())
}
