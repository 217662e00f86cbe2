//! LeaseKeeper over the in-memory backend, with Tokio's clock paused so sleeps are instant.
//!
//! Each test runs its nodes' heartbeats the way a node does (join again when the membership
//! was lost), and cuts a node off from the coordinator to play a pause or a partition.

mod fleet;
mod keeping;
mod link;
mod loss;
