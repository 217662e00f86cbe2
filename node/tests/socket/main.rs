//! The socket of `docs/protocol.md` against the real binary: ordering, acks and
//! relays, viewers, dedupe, `set` after `delete`, resume, stable person ids,
//! and the closes a `hello` can earn.

#[path = "../common/mod.rs"]
mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use common::*;
use serde_json::{json, Map, Value};

/// The owner of a new file in it on two sockets with two client ids (so two
/// people); the first socket's hello, to come back as the same client.
type TwoSockets = (String, String, Hello, (Client, Value), (Client, Value));

/// (owner's token, file id, first hello, first socket, second socket).
async fn owner_on_two_sockets(node: &Node) -> TwoSockets {
    let (owner, id) = owned_file(node).await;
    let hello = Hello::token(&owner);
    let first = Client::join(node, &id, &hello).await;
    let second = Client::join(node, &id, &Hello::token(&owner)).await;
    (owner, id, hello, first, second)
}

mod op_ids;
mod order;
mod people;
mod resume;
mod roles;
mod set_ops;
