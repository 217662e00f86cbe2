//! A person in a room (one socket), and what the room remembers of each client.

use std::sync::Arc;

use serde_json::json;

use super::join::Profile;

use super::access::{self, Access, Role};
use crate::ids::{AccountId, ClientKey, PersonId};
use crate::outbox::Outbox;

pub(super) struct Participant {
    pub(super) outbox: Outbox,
    pub(super) person: PersonId,
    pub(super) client: ClientKey,
    pub(super) name: String,
    pub(super) account: Option<AccountId>,
    pub(super) role: Role,
    /// The role as the socket's reader sees it.
    pub(super) seat: access::Seat,
    pub(super) access: Access,
    /// The version its welcome brought it to: it gets relays only above it.
    pub(super) from_version: u64,
    pub(super) profile: Option<Arc<Profile>>,
}

impl Participant {
    pub(super) fn person_json(&self, page: Option<&str>) -> serde_json::Value {
        let mut person = json!({
            "id": self.person.as_str(),
            "name": self.name,
            "account": self.account.as_ref().map(|a| a.as_str()),
            "role": self.role.as_str(),
            "page": page,
        });
        if let Some(p) = &self.profile {
            person["sub"] = json!(p.sub);
            if let Some(c) = &p.color {
                person["color"] = json!(c);
            }
            if let Some(a) = &p.avatar {
                person["avatar"] = json!(a);
            }
        }
        person
    }
}

/// What a room remembers of a client id (its person is [`PersonId::of_client`], kept
/// nowhere).
#[derive(Default)]
pub(super) struct ClientState {
    pub(super) highest_op: u64,
    /// The version of its last patch accepted here (0: none): once durable, the store
    /// answers for the client and the room may forget it.
    pub(super) last_version: u64,
}
