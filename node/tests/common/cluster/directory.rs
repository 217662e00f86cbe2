//! The nodes of a cluster as clients see them, and where the ring puts a file.

use super::*;

/// One node of a cluster as clients see it.
#[derive(Clone, Debug)]
pub struct Member {
    pub id: String,
    pub port: u16,
    /// Live and taking work: what the router would route to.
    pub up: bool,
}

/// The nodes of a cluster, shared with client tasks: the router's view.
#[derive(Clone, Default)]
pub struct Directory(Arc<Mutex<Vec<Member>>>);

impl Directory {
    pub fn members(&self) -> Vec<Member> {
        self.0.lock().unwrap().clone()
    }

    pub(super) fn set_up(&self, id: &str, up: bool) {
        for m in self.0.lock().unwrap().iter_mut() {
            if m.id == id {
                m.up = up;
            }
        }
    }

    pub(super) fn set_port(&self, id: &str, port: u16) {
        for m in self.0.lock().unwrap().iter_mut() {
            if m.id == id {
                m.port = port;
            }
        }
    }

    pub(super) fn push(&self, member: Member) {
        self.0.lock().unwrap().push(member);
    }

    pub fn port_of(&self, id: &str) -> u16 {
        self.members()
            .into_iter()
            .find(|m| m.id == id)
            .unwrap_or_else(|| panic!("no node {id} in the cluster"))
            .port
    }

    /// The node the consistent hash ring of the up members picks for `file`.
    pub fn owner(&self, file: &str) -> String {
        self.order(file)
            .first()
            .map(|m| m.id.clone())
            .expect("no node is up")
    }

    /// Up members in the order a router tries them for `file`: the ring owner
    /// first.
    pub fn order(&self, file: &str) -> Vec<Member> {
        let members = self.members();
        let up: Vec<atrium_coordinator::NodeId> = members
            .iter()
            .filter(|m| m.up)
            .map(|m| atrium_coordinator::NodeId::parse(&m.id).expect("node id"))
            .collect();
        let ring = atrium_coordinator::Ring::new(up.iter());
        ring.candidates(file)
            .filter_map(|id| members.iter().find(|m| m.id == id.as_str()).cloned())
            .collect()
    }
}

/// Where a file's owner would be with a given set of node ids.
pub fn ring_owner(ids: &[&str], file: &str) -> String {
    let ids: Vec<atrium_coordinator::NodeId> = ids
        .iter()
        .map(|id| atrium_coordinator::NodeId::parse(id).expect("node id"))
        .collect();
    atrium_coordinator::Ring::new(ids.iter())
        .owner(file)
        .expect("empty ring")
        .as_str()
        .to_string()
}
