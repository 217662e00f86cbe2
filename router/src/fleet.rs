//! The router's view of the fleet: live members, the ring of those taking work, and the lease
//! holders it has heard of. Fed by the coordinator watcher, read on every request without a
//! lock on the members (an `ArcSwap`), and with one short lock on the holder cache.

#[cfg(test)]
mod tests;
mod view;

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use atrium_coordinator::NodeId;
use lru::LruCache;

use view::View;
pub use view::{Choice, Kind, Node};

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

    /// A live member as the router routes to it.
    pub fn member(&self, node: &NodeId) -> Option<Node> {
        self.view.load().live.get(node).cloned()
    }

    /// Drops a member the coordinator no longer has (an eviction), without waiting for the
    /// watcher to hear of it.
    pub fn forget(&self, node: &NodeId) {
        let view = self.view.load();
        let rest = view.live.values().filter(|n| &n.id != node).cloned();
        self.set_members(rest.collect());
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
