//! People in a room: joining (access, seats, then the welcome) and leaving.

use atrium_protocol::CloseCode;
use std::time::Instant;

use serde_json::json;

use super::access::{self, Role};
use super::core::RoomCore;
use super::exit::{Effect, Exit};
use super::participant::Participant;
use super::pending::Pending;
use super::{JoinError, JoinRequest, Joined};
use crate::ids::PersonId;
use crate::outbox::{shared, ConnId};

impl RoomCore {
    /// Forgets clients with no socket here whose patches are all durable (or who never had
    /// one accepted), once there are [`FORGET_CLIENTS_FROM`](super::core::FORGET_CLIENTS_FROM)
    /// or twice as many as the last time: a guest saying hello with a new client id on every
    /// reconnect (and an edit key, a patch each time) added one for good (the eleventh
    /// and twelfth reviews). Nothing of theirs is lost: the store keeps a writer's highest op
    /// once its patch is durable, and the next hello reads it from there; a person's id comes
    /// from the client id and the room's salt, so one who comes back is the same person to
    /// the others. A hello whose read began before the forgetting reads again
    /// ([`JoinError::Reread`]), so a resend is never applied twice.
    fn forget_gone_clients(&mut self, now: Instant) {
        if self.clients.len() < self.clients_mark {
            return;
        }
        let here: std::collections::HashSet<_> =
            self.participants.values().map(|p| p.client).collect();
        let durable = self.durable;
        let before = self.clients.len();
        self.clients.retain(|client, state| {
            let writer = state.highest_op > 0;
            here.contains(client) || (writer && state.last_version > durable)
        });
        if self.clients.len() < before {
            self.forgot_clients_at = Some(now);
        }
        self.clients_mark = (2 * self.clients.len()).max(super::core::FORGET_CLIENTS_FROM);
    }

    pub(super) fn join(&mut self, req: JoinRequest, now: Instant) -> Result<Joined, JoinError> {
        if let Some(f) = &self.finishing {
            let code = if matches!(f.exit, Exit::Moved) {
                CloseCode::Moved
            } else {
                CloseCode::ServiceRestart
            };
            return Err(JoinError::Unavailable(code));
        }
        let account_id = req.account.as_ref().map(|(id, _)| id);
        let access = access::access(&self.record, account_id, req.key.as_deref(), req.grant)
            .map_err(JoinError::Denied)?;
        let (allowed, mut reason) =
            access::role(&self.record, access).map_err(JoinError::Denied)?;
        let welcome_len = self.welcome_len(req.since, req.client);
        self.pace_welcome(&req, welcome_len)?;
        // A copy of the document is reserved only if one is made (below): not for a joiner
        // that shares one, or that is turned away first.
        let copy_len = self.copy_len(req.since, req.client);
        self.reserve_welcome(welcome_len.saturating_sub(copy_len))?;

        // A newer hello of the same client replaces the older socket, quietly: for
        // everyone else the person never left.
        let replaced: Vec<ConnId> = self
            .participants
            .iter()
            .filter(|(_, m)| m.client == req.client)
            .map(|(c, _)| *c)
            .collect();
        if replaced.is_empty() && self.participants.len() >= self.rules.config.room_people {
            return Err(JoinError::Full);
        }
        self.forget_gone_clients(now);
        let forgot_since_read = self
            .forgot_clients_at
            .is_some_and(|at| req.stored_op_read_at < at);
        if forgot_since_read && !self.clients.contains_key(&req.client) {
            return Err(JoinError::Reread);
        }
        // Before anyone is told of the joiner: a refusal here costs the room nothing.
        let by_link = matches!(access, access::Access::Key { .. });
        let doc = self.shared_welcome_doc(req.since, req.client, &req.outbox, by_link, now)?;
        let state = self.clients.entry(req.client).or_default();
        state.highest_op = state.highest_op.max(req.stored_op);
        let person = PersonId::of_client(&self.person_salt, &req.client);
        let charged = self.charge_welcome(&req, welcome_len);
        let mut page = None;
        for conn in &replaced {
            // What the old socket left for the tick is the person's (its page above all).
            if let Some(update) = self.presences.take_for(*conn) {
                self.board.update(*conn, update, now);
            }
            if let Some(old) = self.participants.remove(conn) {
                self.forget_welcome(*conn, old.from_version);
                old.outbox.close(
                    CloseCode::Replaced,
                    "replaced by a newer socket of the same client",
                );
                page = self.board.leave(*conn, false, now).flatten();
                self.waiting.retain(|c| c != conn);
                self.rules.metrics.people.dec();
            }
        }
        let conn = req.outbox.id;
        let (role, full) = self.seat(conn, allowed, access);
        reason = reason.or(full);

        let name = match &req.account {
            Some((_, name)) => name.clone(),
            None => req
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "Guest".into()),
        };
        let member = Participant {
            outbox: req.outbox.clone(),
            person: person.clone(),
            client: req.client,
            name,
            account: req.account.map(|(id, _)| id),
            role,
            seat: req.seat.clone(),
            access,
            from_version: self.version,
            profile: req.profile.clone(),
        };
        member.seat.set(role, full.is_some());
        let returning = self.board.cancel_leave(&person);
        if replaced.is_empty() && !returning {
            let join = json!({"type": "join", "people": [member.person_json(page.as_deref())]});
            self.broadcast(shared(join.to_string()), "join");
        }
        if replaced.is_empty() {
            let address = member.outbox.address();
            self.effect(Effect::Webhook(
                "person.joined",
                person_data(&member),
                address,
            ));
        }
        self.board
            .join(conn, req.outbox.clone(), person.clone(), page, now);
        // Whatever the room sends this person before its welcome waits behind it.
        req.outbox.hold();
        self.participants.insert(conn, member);
        self.rules.metrics.people.inc();
        self.sync_counts();
        self.update_presence_rate();
        self.idle_since = None;

        let welcome = self.welcome(conn, role, reason, req.since, req.client, doc);
        self.after_durable(Pending::Welcome {
            v: self.version,
            to: conn,
            frame: welcome,
            charged,
        });
        Ok(Joined { person, role })
    }

    pub(super) fn leave(&mut self, conn: ConnId, now: Instant) {
        if let Some(m) = self.participants.remove(&conn) {
            let address = m.outbox.address();
            self.effect(Effect::Webhook("person.left", person_data(&m), address));
            self.rules.metrics.people.dec();
            self.board.leave(conn, true, now);
            self.waiting.retain(|c| *c != conn);
            if m.role == Role::Editor {
                self.settle_roles();
            }
            self.sync_counts();
            self.update_presence_rate();
            self.forget_welcome(conn, m.from_version);
        }
        if self.participants.is_empty() {
            self.idle_since = Some(now);
        }
    }

    /// The welcome of `conn` (joined at `from_version`), who left before that version was
    /// durable, is not kept for the store to catch up: what it holds (a copy of a large
    /// document charged on the allowance for large messages, which no socket holds yet, so
    /// none can be made to make way) goes now, and what its address was charged for it
    /// comes back. Before, a store
    /// that stalled kept such copies charged until it recovered, though the room had closed
    /// their sockets 1013 (the twenty-fourth review).
    fn forget_welcome(&mut self, conn: ConnId, from_version: u64) {
        // Welcomed already: its welcome went when its version became durable.
        if from_version <= self.durable {
            return;
        }
        let mut refunds = Vec::new();
        self.pending.retain(|p| match p {
            Pending::Welcome { to, charged, .. } if *to == conn => {
                refunds.extend(*charged);
                false
            }
            _ => true,
        });
        for (address, bytes) in refunds {
            self.rules.documents_sent.refund(&address, bytes);
        }
    }
}

/// Who a `person.joined` or `person.left` webhook names: what the room shows of them,
/// plus their account or app `sub` so the app's backend can tell who it was.
fn person_data(m: &Participant) -> serde_json::Value {
    json!({
        "person": {
            "id": m.person.as_str(),
            "name": m.name,
            "role": m.role.as_str(),
            "account_id": m.account.as_ref().map(|a| a.as_str()),
            "sub": m.profile.as_ref().map(|p| p.sub.as_str()),
        }
    })
}
