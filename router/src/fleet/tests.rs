use std::collections::HashMap;
use std::net::SocketAddr;

use atrium_coordinator::Ring;

use super::*;

fn id(s: &str) -> NodeId {
    NodeId::parse(s).unwrap()
}

fn node(name: &str, port: u16, draining: bool) -> Node {
    Node {
        id: id(name),
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        address: format!("127.0.0.1:{port}"),
        draining,
    }
}

/// n0, n1 and n2 on ports 1000 to 1002, those `draining` says so draining.
fn members(draining: impl Fn(&NodeId) -> bool) -> Vec<Node> {
    ["n0", "n1", "n2"]
        .iter()
        .enumerate()
        .map(|(i, n)| node(n, 1000 + i as u16, draining(&id(n))))
        .collect()
}

fn three() -> Arc<Fleet> {
    let fleet = Fleet::new(16);
    assert!(fleet.set_members(members(|_| false)));
    fleet
}

/// Three members, with file `f` held by one that is not its ring owner: (fleet, owner, holder).
fn f_held_off_its_owner() -> (Arc<Fleet>, NodeId, NodeId) {
    let fleet = three();
    let owner = fleet.for_file("f", &[]).unwrap().node;
    let other = ["n0", "n1", "n2"]
        .into_iter()
        .map(id)
        .find(|n| *n != owner)
        .unwrap();
    fleet.set_holder("f", Some(other.clone()));
    (fleet, owner, other)
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
    let (fleet, owner, other) = f_held_off_its_owner();
    let choice = fleet.for_file("f", &[]).unwrap();
    assert_eq!((choice.node, choice.kind), (other.clone(), Kind::Lease));
    fleet.set_holder("f", None);
    assert_eq!(fleet.for_file("f", &[]).unwrap().node, owner);
}

#[test]
fn holders_that_leave_or_drain_are_not_used() {
    let (fleet, _, other) = f_held_off_its_owner();
    // Draining: still live, but sent nothing new.
    fleet.set_members(members(|n| *n == other));
    assert_ne!(fleet.for_file("f", &[]).unwrap().node, other);
    // Gone: forgotten.
    let nodes: Vec<Node> = members(|_| false)
        .into_iter()
        .filter(|n| n.id != other)
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
