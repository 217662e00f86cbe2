//! The router's view of the fleet: live members, the ring of those taking work, and the lease
//! holders it has heard of. Fed by the coordinator watcher, read on every request without a
//! lock on the members (an `ArcSwap`), and with one short lock on the holder cache.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use atrium_coordinator::{NodeId, Ring};
use lru::LruCache;

/// One live member as the router routes to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: NodeId,
    /// Where to connect (its advertised address, resolved when the membership changed).
    pub addr: SocketAddr,
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
struct View {
    live: HashMap<NodeId, Node>,
    /// Live, non-draining members, sorted by id (the round-robin order).
    serving: Vec<NodeId>,
    ring: Ring,
}

impl View {
    fn new(nodes: Vec<Node>) -> Self {
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

    fn serves(&self, id: &NodeId) -> Option<&Node> {
        self.live.get(id).filter(|n| !n.draining)
    }

    fn choice(&self, id: &NodeId, kind: Kind) -> Option<Choice> {
        self.live.get(id).map(|n| Choice {
            node: n.id.clone(),
            addr: n.addr,
            kind,
        })
    }
}

/// The fleet as this router knows it.
pub struct Fleet {
    view: ArcSwap<View>,
    holders: Mutex<LruCache<String, NodeId>>,
    next: AtomicUsize,
}

impl Fleet {
    /// An empty fleet remembering at most `holders` lease holders.
    pub fn new(holders: usize) -> Arc<Self> {
        let cap = NonZeroUsize::new(holders.max(1)).expect("at least one");
        Arc::new(Self {
            view: ArcSwap::from_pointee(View::new(Vec::new())),
            holders: Mutex::new(LruCache::new(cap)),
            next: AtomicUsize::new(0),
        })
    }

    /// Replaces the membership; forgets holders that are no longer live. Returns whether the
    /// set of members (or a draining flag, or an address) changed.
    pub fn set_members(&self, nodes: Vec<Node>) -> bool {
        let next = View::new(nodes);
        let old = self.view.load();
        let changed = old.live != next.live;
        if changed {
            self.view.store(Arc::new(next));
            let view = self.view.load();
            let mut holders = self.holders();
            let gone: Vec<String> = holders
                .iter()
                .filter(|(_, id)| !view.live.contains_key(*id))
                .map(|(file, _)| file.clone())
                .collect();
            for file in gone {
                holders.pop(&file);
            }
        }
        changed
    }

    /// Records (or forgets, with `None`) a file's lease holder.
    pub fn set_holder(&self, file: &str, holder: Option<NodeId>) {
        let mut holders = self.holders();
        match holder {
            Some(id) => {
                holders.put(file.to_owned(), id);
            }
            None => {
                holders.pop(file);
            }
        }
    }

    /// The known lease holder of a file (live or not).
    pub fn holder(&self, file: &str) -> Option<NodeId> {
        self.holders().get(file).cloned()
    }

    /// The node for a file, skipping the nodes in `avoid`: its live, non-draining lease holder,
    /// else its ring owner, else the next ring candidate. Draining members get nothing.
    pub fn for_file(&self, file: &str, avoid: &[NodeId]) -> Option<Choice> {
        let view = self.view.load();
        if let Some(holder) = self.holder(file) {
            if !avoid.contains(&holder) && view.serves(&holder).is_some() {
                return view.choice(&holder, Kind::Lease);
            }
        }
        let kind = if avoid.is_empty() {
            Kind::Ring
        } else {
            Kind::Fallback
        };
        let next = view.ring.candidates(file).find(|id| !avoid.contains(id));
        next.and_then(|id| view.choice(&id, kind))
    }

    /// Any live, non-draining member not in `avoid`, in turn.
    pub fn any(&self, avoid: &[NodeId]) -> Option<Choice> {
        let view = self.view.load();
        let n = view.serving.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|i| &view.serving[(start + i) % n])
            .find(|id| !avoid.contains(id))
            .and_then(|id| view.choice(id, Kind::Any))
    }

    /// Whether `node` is in the live set.
    pub fn is_live(&self, node: &NodeId) -> bool {
        self.view.load().live.contains_key(node)
    }

    /// Live members (draining included).
    pub fn live_count(&self) -> usize {
        self.view.load().live.len()
    }

    /// Members on the ring (live and not draining).
    pub fn ring_size(&self) -> usize {
        self.view.load().serving.len()
    }

    /// Lease holders remembered.
    pub fn holders_known(&self) -> usize {
        self.holders().len()
    }

    fn holders(&self) -> std::sync::MutexGuard<'_, LruCache<String, NodeId>> {
        self.holders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> NodeId {
        NodeId::parse(s).unwrap()
    }

    fn node(name: &str, port: u16, draining: bool) -> Node {
        Node {
            id: id(name),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            draining,
        }
    }

    fn three() -> Arc<Fleet> {
        let fleet = Fleet::new(16);
        assert!(fleet.set_members(vec![
            node("n0", 1000, false),
            node("n1", 1001, false),
            node("n2", 1002, false),
        ]));
        fleet
    }

    #[test]
    fn files_go_to_the_ring_owner_the_nodes_compute() {
        let fleet = three();
        let ring = Ring::new([id("n0"), id("n1"), id("n2")].iter());
        for i in 0..200 {
            let file = format!("file{i}");
            let choice = fleet.for_file(&file, &[]).unwrap();
            assert_eq!(choice.kind, Kind::Ring);
            assert_eq!(Some(choice.node), ring.owner(&file));
        }
    }

    #[test]
    fn a_live_holder_wins_over_the_ring() {
        let fleet = three();
        let owner = fleet.for_file("f", &[]).unwrap().node;
        let other = ["n0", "n1", "n2"]
            .into_iter()
            .map(id)
            .find(|n| *n != owner)
            .unwrap();
        fleet.set_holder("f", Some(other.clone()));
        let choice = fleet.for_file("f", &[]).unwrap();
        assert_eq!((choice.node, choice.kind), (other.clone(), Kind::Lease));
        fleet.set_holder("f", None);
        assert_eq!(fleet.for_file("f", &[]).unwrap().node, owner);
    }

    #[test]
    fn holders_that_leave_or_drain_are_not_used() {
        let fleet = three();
        let owner = fleet.for_file("f", &[]).unwrap().node;
        let other = ["n0", "n1", "n2"]
            .into_iter()
            .map(id)
            .find(|n| *n != owner)
            .unwrap();
        fleet.set_holder("f", Some(other.clone()));
        // Draining: still live, but sent nothing new.
        let nodes: Vec<Node> = ["n0", "n1", "n2"]
            .iter()
            .enumerate()
            .map(|(i, n)| node(n, 1000 + i as u16, id(n) == other))
            .collect();
        fleet.set_members(nodes);
        assert_ne!(fleet.for_file("f", &[]).unwrap().node, other);
        // Gone: forgotten.
        let nodes: Vec<Node> = ["n0", "n1", "n2"]
            .iter()
            .enumerate()
            .filter(|(_, n)| id(n) != other)
            .map(|(i, n)| node(n, 1000 + i as u16, false))
            .collect();
        fleet.set_members(nodes);
        assert_eq!(fleet.holder("f"), None);
        assert_eq!(fleet.live_count(), 2);
    }

    #[test]
    fn avoiding_the_owner_gives_the_next_candidate() {
        let fleet = three();
        let ring = Ring::new([id("n0"), id("n1"), id("n2")].iter());
        let order: Vec<NodeId> = ring.candidates("f").collect();
        let choice = fleet.for_file("f", &order[..1]).unwrap();
        assert_eq!(
            (choice.node, choice.kind),
            (order[1].clone(), Kind::Fallback)
        );
    }

    #[test]
    fn any_spreads_evenly_over_serving_members() {
        let fleet = three();
        let mut counts: HashMap<NodeId, usize> = HashMap::new();
        for _ in 0..300 {
            *counts.entry(fleet.any(&[]).unwrap().node).or_default() += 1;
        }
        assert_eq!(counts.len(), 3);
        assert!(counts.values().all(|c| *c == 100), "{counts:?}");
        let avoid = [id("n0"), id("n1")];
        assert_eq!(fleet.any(&avoid).unwrap().node, id("n2"));
        assert_eq!(fleet.any(&[id("n0"), id("n1"), id("n2")]), None);
    }

    #[test]
    fn an_empty_fleet_routes_nowhere() {
        let fleet = Fleet::new(4);
        assert_eq!(fleet.for_file("f", &[]), None);
        assert_eq!(fleet.any(&[]), None);
    }

    #[test]
    fn draining_members_get_nothing() {
        let fleet = Fleet::new(4);
        fleet.set_members(vec![node("n0", 1000, true)]);
        assert_eq!(fleet.for_file("f", &[]), None);
        assert_eq!(fleet.any(&[]), None);
        assert_eq!((fleet.live_count(), fleet.ring_size()), (1, 0));
    }

    #[test]
    fn the_holder_cache_is_bounded() {
        let fleet = Fleet::new(2);
        fleet.set_holder("a", Some(id("n0")));
        fleet.set_holder("b", Some(id("n0")));
        fleet.set_holder("c", Some(id("n0")));
        assert_eq!(fleet.holders_known(), 2);
        assert_eq!(fleet.holder("a"), None);
    }
}
