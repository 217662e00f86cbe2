//! Editor seats: at most `ATRIUM_ROOM_EDITORS` editors in a file. Others with
//! edit access join as viewers (`reason: editors-full`) and wait in arrival
//! order; when a seat frees, the first one waiting is promoted. The file's
//! owner always gets a seat, even past the cap.

use serde_json::json;

use super::access::{self, Access, Role};
use super::core::RoomCore;
use crate::outbox::{shared, ConnId};

impl RoomCore {
    fn editors(&self) -> usize {
        self.participants
            .values()
            .filter(|m| m.role == Role::Editor)
            .count()
    }

    /// The role a newcomer gets, given the role its access allows.
    pub(super) fn seat(
        &mut self,
        conn: ConnId,
        allowed: Role,
        access: Access,
    ) -> (Role, Option<&'static str>) {
        if allowed == Role::Viewer {
            return (Role::Viewer, None);
        }
        if access == Access::Owner || self.editors() < self.rules.config.room_editors {
            return (Role::Editor, None);
        }
        self.waiting.push_back(conn);
        (Role::Viewer, Some(access::EDITORS_FULL))
    }

    /// Whether a viewer is one waiting for an editor seat.
    pub(super) fn is_waiting(&self, conn: ConnId) -> bool {
        self.waiting.contains(&conn)
    }

    /// Brings every role in line with the file's link setting and the cap:
    /// demotes those whose access no longer allows editing, queues those who may
    /// now edit, fills free seats in arrival order, and tells everyone of each change.
    pub(super) fn settle_roles(&mut self) {
        let mut changes = Vec::new();
        for (conn, m) in &mut self.participants {
            let allowed = access::role(&self.record, m.access).map_or(Role::Viewer, |(r, _)| r);
            if allowed == Role::Viewer {
                self.waiting.retain(|c| c != conn);
                if m.role == Role::Editor {
                    m.role = Role::Viewer;
                    changes.push(*conn);
                }
            } else if m.role == Role::Viewer && !self.waiting.contains(conn) {
                self.waiting.push_back(*conn);
            }
        }
        self.waiting.retain(|c| self.participants.contains_key(c));
        let cap = self.rules.config.room_editors;
        let mut editors = self.editors();
        while editors < cap {
            let Some(conn) = self.waiting.pop_front() else {
                break;
            };
            if let Some(m) = self.participants.get_mut(&conn) {
                m.role = Role::Editor;
                changes.push(conn);
                editors += 1;
            }
        }
        for (conn, m) in &self.participants {
            m.seat.set(m.role, self.waiting.contains(conn));
        }
        if !changes.is_empty() {
            self.sync_counts();
        }
        for conn in changes {
            if let Some(m) = self.participants.get(&conn) {
                let msg = json!({"type": "role", "id": m.person.as_str(), "role": m.role.as_str()});
                self.broadcast(shared(msg.to_string()), "role");
            }
        }
    }
}
