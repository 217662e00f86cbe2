//! One consistent membership as the router reads it, and what a routing decision is made of.

use std::collections::HashMap;
use std::net::SocketAddr;

use atrium_coordinator::{NodeId, Ring};

/// One live member as the router routes to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: NodeId,
    /// Where to connect (its advertised address, resolved when the membership changed).
    pub addr: SocketAddr,
    /// Its advertised address as its membership record has it.
    pub address: String,
    pub draining: bool,
}

/// Why a node was picked; a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The file's live lease holder.
    Lease,
    /// The ring owner of the file among live, non-draining members.
    Ring,
    /// Any live, non-draining member (routes that are not a file's).
    Any,
    /// A second choice: a later ring candidate after the first was found gone.
    Fallback,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lease => "lease",
            Kind::Ring => "ring",
            Kind::Any => "any",
            Kind::Fallback => "fallback",
        }
    }
}

/// A routing decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub node: NodeId,
    pub addr: SocketAddr,
    pub kind: Kind,
}

/// One consistent membership: swapped whole when it changes.
pub(super) struct View {
    pub(super) live: HashMap<NodeId, Node>,
    /// Live, non-draining members, sorted by id (the round-robin order).
    pub(super) serving: Vec<NodeId>,
    pub(super) ring: Ring,
}

impl View {
    pub(super) fn new(nodes: Vec<Node>) -> Self {
        let mut serving: Vec<NodeId> = nodes
            .iter()
            .filter(|n| !n.draining)
            .map(|n| n.id.clone())
            .collect();
        serving.sort();
        serving.dedup();
        let ring = Ring::new(serving.iter());
        let live = nodes.into_iter().map(|n| (n.id.clone(), n)).collect();
        Self {
            live,
            serving,
            ring,
        }
    }

    pub(super) fn serves(&self, id: &NodeId) -> Option<&Node> {
        self.live.get(id).filter(|n| !n.draining)
    }

    pub(super) fn choice(&self, id: &NodeId, kind: Kind) -> Option<Choice> {
        self.live.get(id).map(|n| Choice {
            node: n.id.clone(),
            addr: n.addr,
            kind,
        })
    }
}
