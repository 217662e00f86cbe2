//! The ring's placement is part of the fleet's protocol: the router and every node must put
//! each file on the same node. `ring_vectors.json` pins it down; if a change here breaks
//! this test, files would move between nodes on upgrade: change the table only on purpose
//! (`cargo test -p atrium-coordinator --test ring_vectors -- --ignored --nocapture` prints a
//! fresh one).

use std::collections::{HashMap, HashSet};

use atrium_coordinator::{NodeId, Ring};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Case {
    members: Vec<String>,
    /// file id -> owner
    owners: Vec<(String, String)>,
}

fn ring(members: &[String]) -> Ring {
    let ids: Vec<NodeId> = members.iter().map(|m| NodeId::parse(m).unwrap()).collect();
    Ring::new(&ids)
}

fn keys() -> Vec<String> {
    let mut keys: Vec<String> = (0..12).map(|i| format!("file-{i}")).collect();
    keys.extend(["a", "doc:42", "Ünïcode/ключ", "x".repeat(200).as_str()].map(String::from));
    keys
}

fn member_sets() -> Vec<Vec<String>> {
    let set = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect();
    vec![
        set(&["node-1"]),
        set(&["node-1", "node-2", "node-3"]),
        set(&["node-1", "node-2", "node-3", "node-4"]),
        set(&["atrium-0", "atrium-1", "atrium-2", "atrium-3", "atrium-4"]),
    ]
}

#[test]
fn placement_matches_the_checked_in_table() {
    let cases: Vec<Case> = serde_json::from_str(include_str!("ring_vectors.json")).unwrap();
    assert_eq!(cases.len(), member_sets().len());
    for case in cases {
        // Member order must not matter.
        let mut reversed = case.members.clone();
        reversed.reverse();
        for r in [ring(&case.members), ring(&reversed)] {
            for (file, owner) in &case.owners {
                assert_eq!(
                    r.owner(file).unwrap().as_str(),
                    owner,
                    "{file} with {:?}",
                    case.members
                );
            }
        }
    }
}

#[test]
fn candidates_start_with_the_owner_and_visit_each_member_once() {
    let members = member_sets().swap_remove(3);
    let r = ring(&members);
    for file in keys() {
        let order: Vec<NodeId> = r.candidates(&file).collect();
        assert_eq!(order.first(), r.owner(&file).as_ref());
        let distinct: HashSet<&NodeId> = order.iter().collect();
        assert_eq!(distinct.len(), members.len());
        assert_eq!(order.len(), members.len());
    }
    assert_eq!(Ring::new(&[]).owner("f"), None);
    assert_eq!(Ring::new(&[]).candidates("f").count(), 0);
}

#[test]
fn a_fourth_node_takes_about_a_quarter_of_the_files_from_the_others() {
    let three = ring(&member_sets()[1]);
    let four = ring(&member_sets()[2]);
    let n = 20_000;
    let mut moved = 0;
    let mut load: HashMap<NodeId, usize> = HashMap::new();
    for i in 0..n {
        // Similar ids, differing only at the end, as real file ids often do.
        let file = format!("team-7/file-{i:06}");
        let (before, after) = (three.owner(&file).unwrap(), four.owner(&file).unwrap());
        *load.entry(after.clone()).or_default() += 1;
        if before != after {
            assert_eq!(after.as_str(), "node-4", "{file} moved between old nodes");
            moved += 1;
        }
    }
    let share = moved as f64 / n as f64;
    assert!((0.18..0.32).contains(&share), "{share:.3} of files moved");
    for (node, files) in load {
        let part = files as f64 / n as f64;
        assert!((0.15..0.35).contains(&part), "{node} serves {part:.3}");
    }
}

#[test]
#[ignore = "prints a fresh table for ring_vectors.json"]
fn print_table() {
    let cases: Vec<Case> = member_sets()
        .into_iter()
        .map(|members| {
            let r = ring(&members);
            let owners = keys()
                .into_iter()
                .map(|k| {
                    let o = r.owner(&k).unwrap().to_string();
                    (k, o)
                })
                .collect();
            Case { members, owners }
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&cases).unwrap());
}
