//! One person in the room under test: how they join, and what their socket got.

use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::*;

/// One socket in the room, as its writer would see it.
pub struct Person {
    pub conn: ConnId,
    pub client: ClientKey,
    pub joined: Joined,
    pub seat: Seat,
    /// The socket's outbox, as its writer sees it (whether it waits for its peer).
    pub outbox: Outbox,
    rx: OutboxReceiver,
}

impl Person {
    /// Every message queued for this socket since the last look, as JSON.
    pub fn frames(&mut self) -> Vec<Value> {
        self.rx
            .drain_now()
            .into_iter()
            .filter_map(|out| match out {
                Out::Message(m) => serde_json::from_slice(m.payload()).ok(),
                Out::Spliced(s) => serde_json::from_slice(&s.payload()).ok(),
                Out::Control(_) | Out::Rest(_) => None,
            })
            .collect()
    }

    /// The messages of one type since the last look (others are dropped).
    pub fn of_type(&mut self, kind: &str) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|m| m["type"] == kind)
            .collect()
    }

    /// The close code asked for this socket, if any.
    pub fn closed(&self) -> Option<u16> {
        self.rx.close.requested().map(|c| c.code)
    }
}

/// How a test joins: as the file's owner, or with one of its link keys.
#[derive(Clone, Copy)]
pub enum As {
    Owner,
    Editor,
    Viewer,
    /// Someone an app token let in, with this grant.
    App(crate::apptoken::Level),
}

impl Harness {
    pub fn try_join(&mut self, who: As, since: Option<u64>) -> Result<Person, JoinError> {
        self.next_client += 1;
        let client = ClientKey([self.next_client; 16]);
        self.try_join_as(who, client, since)
    }

    /// Joins with a given client id (a second socket of the same client replaces the first).
    pub fn try_join_as(
        &mut self,
        who: As,
        client: ClientKey,
        since: Option<u64>,
    ) -> Result<Person, JoinError> {
        // Every test socket comes from one address (documentation's 192.0.2.0/24).
        self.try_join_from(who, client, since, [192, 0, 2, 1])
    }

    /// A new client joining from `address`.
    pub fn join_from(&mut self, who: As, address: [u8; 4]) -> Person {
        self.next_client += 1;
        let client = ClientKey([self.next_client; 16]);
        self.try_join_from(who, client, None, address)
            .unwrap_or_else(|e| panic!("join refused: {e:?}"))
    }

    pub fn try_join_from(
        &mut self,
        who: As,
        client: ClientKey,
        since: Option<u64>,
        address: [u8; 4],
    ) -> Result<Person, JoinError> {
        let (out, rx) = outbox(1024, 64 << 20, self.core.rules.metrics.clone());
        out.set_address(address.into());
        let conn = out.id;
        let seat = Seat::default();
        let (account, key, grant) = match who {
            As::Owner => (Some((self.owner.clone(), "Owner".to_string())), None, None),
            As::Editor => (None, Some(EDIT_KEY.to_string()), None),
            As::Viewer => (None, Some(VIEW_KEY.to_string()), None),
            As::App(level) => (
                Some((crate::apptoken::owner_for(Some("ann")), "Ann".to_string())),
                None,
                Some(level),
            ),
        };
        let profile = grant.map(|_| {
            std::sync::Arc::new(crate::room::Profile {
                sub: "ann".into(),
                color: Some("#ff0066".into()),
                avatar: None,
            })
        });
        let req = JoinRequest {
            outbox: out.clone(),
            client,
            account,
            key,
            name: Some(format!("Guest {}", client.0[0])),
            since,
            stored_op: self.stored_ops.get(&client).copied().unwrap_or(0),
            // As the reader does: read just before the join reaches the room.
            stored_op_read_at: self.read_at.take().unwrap_or(self.now),
            seat: seat.clone(),
            grant,
            profile,
            may_edit: Some(false),
        };
        let (tx, mut reply) = oneshot::channel();
        self.send(RoomCmd::Join(req, tx));
        let joined = reply.try_recv().expect("the core answers a join at once")?;
        Ok(Person {
            conn,
            outbox: out,
            client,
            joined,
            seat,
            rx,
        })
    }

    /// Joins and makes the welcome durable, so it is delivered.
    pub fn join(&mut self, who: As) -> Person {
        let mut p = self.try_join(who, None).expect("join");
        self.commit();
        let welcome = p.frames();
        assert_eq!(
            welcome.first().map(|w| w["type"].clone()),
            Some(json!("welcome"))
        );
        p
    }
}
