//! Edits: ordering and applying patches, handing each turn to the journal, and
//! releasing acks, relays and welcomes once their versions are durable.

use std::time::Instant;

use super::access::{self, Role};
use super::core::RoomCore;
use super::pending::Pending;
use super::recent::RecentOp;
use super::registry::Ticket;
use crate::outbox::{shared, ConnId};
use crate::protocol::{self, Patch, Refusal};
use crate::storage::Share;
use crate::store::LoggedPatch;

impl RoomCore {
    pub(super) fn patch(&mut self, conn: ConnId, patch: Patch, mut inbound: Ticket, now: Instant) {
        let Some(member) = self.participants.get(&conn) else {
            return;
        };
        let outbox = member.outbox.clone();
        let refuse = |code: &'static str, message: &str| {
            debug_assert!(atrium_protocol::REJECT_CODES.contains(&code), "{code}");
            self.rules.metrics.rejects.with_label_values(&[code]).inc();
            outbox.send_text(protocol::reject(&Refusal {
                id: Some(patch.id),
                code,
                message: message.into(),
            }));
        };
        if self.finishing.is_some() {
            // Not applied: the client resends it after reconnecting.
            return;
        }
        if member.role != Role::Editor {
            if self.is_waiting(conn) {
                refuse(
                    access::EDITORS_FULL,
                    "the file has as many editors as it allows",
                );
            } else {
                refuse("viewer", "viewers cannot edit this file");
            }
            return;
        }
        let client = member.client;
        let person = member.person.clone();
        let address = outbox.address();
        // A new editor since the last version is named in the next one (the first few are).
        let new_editor =
            (!self.history.editors.contains(&member.name)).then(|| member.name.clone());
        let state = self
            .clients
            .get_mut(&client)
            .expect("every member has a client state");
        if patch.id <= state.highest_op {
            // A resend: answered, never applied twice.
            let v = self
                .recent
                .version_of(client, patch.id)
                .unwrap_or(self.version);
            let ack = protocol::ack(patch.id, v, patch.t.as_deref());
            self.after_durable(Pending::Direct {
                v,
                to: conn,
                frame: shared(ack),
            });
            return;
        }
        // At the memory budget, large patches are refused so documents stop growing.
        if !self.rules.memory.admits_patch(patch.ops_json.len()) {
            self.rules.metrics.memory_refusals.inc();
            refuse("too-large", crate::memory::AT_BUDGET);
            return;
        }
        // An owner at their storage limit: the document may not grow (a patch that does
        // not grow it still lands, so people can delete their way back under).
        // People who came by the link may fill half of it (guests cannot fill the storage
        // the owner works in).
        // A writer's first patch in the file also makes its row of op ids in the store,
        // kept as long as the file: at the limit it lands only if it frees that much.
        let row = if state.highest_op == 0 {
            crate::store::CLIENT_ROW_BYTES
        } else {
            0
        };
        let holder = &self.holder;
        let share = Share::by_link(matches!(member.access, access::Access::Key { .. }));
        let keeps = patch.ops_json.len() as u64 + row;
        let room_to_grow = self.rules.storage.may_grow(holder, keeps, share);
        // What its `set`s rewrite comes from the room's allowance a second (taken last, so
        // patches refused for other reasons do not spend it).
        let rewrite = self.doc.rewrite_cost(&patch.ops) as f64;
        if !take_rewrite(&mut self.rewrites, &self.rules, address, now, rewrite) {
            refuse(
                "too-large",
                "the patch rewrites more of the document's large shapes than this file allows \
                 just now; try again in a moment",
            );
            return;
        }
        let applied = if room_to_grow {
            self.doc.apply(&patch.ops, &self.rules.limits)
        } else {
            let mut no_growth = self.rules.limits.clone();
            no_growth.max_doc_bytes = no_growth.max_doc_bytes.min(self.doc.charged_len());
            // Past their share, a link guest's patch must also free what it adds to the log:
            // text rewritten in place at the same size grew the log by megabytes, in the
            // owner's storage (the sixteenth review). Deleting still lands.
            let logged = match share {
                Share::Link => patch.ops_json.len(),
                Share::Whole => 0,
            };
            self.doc
                .apply_freeing(&patch.ops, &no_growth, row as usize + logged)
        };
        if let Err(e) = applied {
            if !room_to_grow && matches!(e, crate::doc::PatchError::TooLarge(_)) {
                self.rules.storage.refused("patch");
                let full = match share {
                    Share::Whole => crate::storage::FULL,
                    Share::Link => crate::storage::LINK_SHARE_FULL,
                };
                refuse("too-large", full);
            } else {
                refuse(e.code(), &e.to_string());
            }
            return;
        }
        // Parsed ops are applied: what their parse took is free once samples show it.
        inbound.parsed();
        self.rules.storage.added(holder, keeps);
        self.restores.touched(&patch.ops);
        self.version += 1;
        let v = self.version;
        state.highest_op = patch.id;
        state.last_version = v;
        let relay = shared(protocol::relay(
            v,
            person.as_str(),
            &patch.ops_json,
            patch.t.as_deref(),
        ));
        let ack = shared(protocol::ack(patch.id, v, patch.t.as_deref()));
        self.snapshot.logged(patch.ops_json.len(), now);
        self.recent.push(RecentOp {
            v,
            client,
            op_id: patch.id,
            t: patch.t.clone(),
            relay: relay.clone(),
        });
        self.unsent.push(LoggedPatch {
            version: v,
            client,
            op_id: patch.id,
            by: person.to_string(),
            ops: patch.ops_json,
            t: patch.t,
        });
        self.pending.push_back(Pending::Patch {
            v,
            from: conn,
            ack,
            relay,
            _inbound: inbound,
        });
        match new_editor {
            Some(name) => self.edited(&name, now),
            None => {
                self.history.dirty_since.get_or_insert(now);
            }
        }
        self.history.by_link |= share == Share::Link;
    }
}

/// Takes what a patch rewrites from the room's allowance, then from its sender's address's
/// (all files together); refused by either, the room's is given back.
fn take_rewrite(
    room: &mut crate::limits::Bucket,
    rules: &super::core::Rules,
    address: Option<std::net::IpAddr>,
    now: Instant,
    bytes: f64,
) -> bool {
    if bytes <= 0.0 {
        return true;
    }
    if !room.take_amount(now, bytes) {
        return false;
    }
    if rules.rewrites.take(address, bytes, now) {
        return true;
    }
    room.give(now, bytes);
    false
}
