//! Files deleted by prefix on one node: every node closes their rooms (4004). The payload
//! is the ids, one per line (at most `ATRIUM_PREFIX_DELETE_MAX` of 64 bytes each).

use crate::ids::FileId;
use crate::state::AppState;

/// The topic deletions travel on.
pub const FILES_DELETED: &str = "files-deleted";

/// Closes the rooms of these files here and tells every other node to do the same.
pub async fn announce_deleted(state: &AppState, files: &[FileId]) {
    if files.is_empty() {
        return;
    }
    apply_deleted(state, files.iter().cloned());
    let payload = files
        .iter()
        .map(FileId::as_str)
        .collect::<Vec<_>>()
        .join("\n");
    if let Err(e) = state
        .coordinator
        .publish(FILES_DELETED, payload.into_bytes())
        .await
    {
        tracing::warn!(error = %e, "could not announce deleted files to the fleet");
    }
}

/// Closes the rooms of deleted files that are open here.
pub fn apply_deleted(state: &AppState, files: impl Iterator<Item = FileId>) {
    for f in files {
        state.rooms.file_deleted(&f);
    }
}

/// The file ids of a deletion message (anything that is not an id is skipped).
pub(super) fn deleted_ids(payload: &[u8]) -> impl Iterator<Item = FileId> + '_ {
    std::str::from_utf8(payload)
        .unwrap_or("")
        .lines()
        .filter_map(FileId::parse)
}
