//! Restoring a version: an edit like any other. The room computes the patch that turns its
//! document into the restored one, gives it the next version and hands it to the journal
//! with the turn (fenced by the epoch like every append); once it is durable the caller
//! hears of it, everyone in the room gets it as a `patch` (so every client converges without
//! a reload) and a `restored` message, and the result is saved as a "Restored from …"
//! version. Edits before it in the room's queue are applied before it, edits after it on
//! top of it: none is lost.

use std::time::Instant;

use serde_json::json;
use tokio::sync::oneshot;

use super::core::RoomCore;
use super::pending::Pending;
use super::recent::RecentOp;
use super::snapshot::replay_limits;
pub use super::versions::{RestoreError, Restored};
use crate::doc::{parse_ops, DocLimits, Document};
use crate::history::{VersionInfo, VersionKind};
use crate::ids::ClientKey;
use crate::outbox::shared;
use crate::protocol;
use crate::store::LoggedPatch;

/// The client key restores are logged under (no real client's digest is all 0xA7).
pub const RESTORE_CLIENT: ClientKey = ClientKey([0xA7; 16]);
/// The `by` of a restore's `patch` message.
pub const RESTORE_PERSON: &str = "restore";

pub struct RestoreRequest {
    /// The version restored, and its document (compact JSON).
    pub from: VersionInfo,
    pub doc: String,
    /// Who restores it (a name, for the version's editors).
    pub by: String,
    pub reply: oneshot::Sender<Result<Restored, RestoreError>>,
}

/// The title of the version a restore saves.
pub fn restored_title(from: &VersionInfo) -> String {
    match &from.title {
        Some(t) => format!("Restored from \u{201c}{t}\u{201d}"),
        None => format!("Restored from version {}", from.id),
    }
}

impl RoomCore {
    pub(super) fn restore(&mut self, req: RestoreRequest, now: Instant) {
        if self.finishing.is_some() {
            let _ = req.reply.send(Err(RestoreError::Unavailable));
            return;
        }
        let target = match Document::from_json(req.doc.as_bytes(), &replay_limits()) {
            Ok(d) => d,
            Err(e) => {
                let _ = req.reply.send(Err(RestoreError::TooLarge(e.to_string())));
                return;
            }
        };
        // Edits since the last version are kept as a version of their own first, so the
        // restore can be undone exactly by restoring the version before it.
        if self.history.dirty_since.is_some() {
            self.save_version(VersionKind::Auto, None, None, None, None);
        }
        let ops_json = self.doc.patch_to(&target);
        drop(target);
        let limits = DocLimits {
            max_ops: usize::MAX,
            ..self.rules.limits
        };
        let applied = serde_json::from_str(&ops_json)
            .map_err(|e| e.to_string())
            .and_then(|v| parse_ops(&v, &limits).map_err(|e| e.to_string()))
            .and_then(|ops| self.doc.apply(&ops, &limits).map_err(|e| e.to_string()));
        if let Err(e) = applied {
            let _ = req.reply.send(Err(RestoreError::TooLarge(e)));
            return;
        }
        self.version += 1;
        let v = self.version;
        let relay = shared(protocol::relay(v, RESTORE_PERSON, &ops_json, None));
        self.snapshot.logged(ops_json.len(), now);
        self.recent.push(RecentOp {
            v,
            client: RESTORE_CLIENT,
            op_id: v,
            t: None,
            relay: relay.clone(),
        });
        self.unsent.push(LoggedPatch {
            version: v,
            client: RESTORE_CLIENT,
            op_id: v,
            by: RESTORE_PERSON.into(),
            ops: ops_json,
            t: None,
        });
        let notice = json!({
            "type": "restored",
            "v": v,
            "from": req.from,
            "by": req.by,
        })
        .to_string();
        self.pending.push_back(Pending::Restore {
            v,
            relay,
            notice: shared(notice),
            reply: req.reply,
            done: Restored {
                v,
                restored_from: req.from.id,
            },
        });
        self.edited(&req.by, now);
        self.save_version(
            VersionKind::Restore,
            Some(restored_title(&req.from)),
            None,
            Some(req.from.id),
            None,
        );
    }
}
