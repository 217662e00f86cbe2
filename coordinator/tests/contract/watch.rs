//! What watchers hear: lapses within the lease time, lease hand-overs and fleet messages.

use std::time::{Duration, Instant};

use atrium_coordinator::{CoordinatorEvent, NodeId};
use tokio::sync::broadcast;

use crate::fleet::{Backend, Fleet, LAPSE, LEASE};
use crate::support::{beat, live, member, next_event, node};

pub async fn watchers_see_a_lapse_within_the_lease_time(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let mut rx = c2.watch().await.unwrap();
    c1.join(member("a", false)).await.unwrap();
    // b's join is its last heartbeat: its lease starts no earlier than this instant, so
    // a lapse reported less than a lease time after it would be early, however slowly
    // the events below arrive.
    let b_joining = Instant::now();
    c1.join(member("b", false)).await.unwrap();
    let _a = beat(&c1, "a");
    next_event(&mut rx, LAPSE, |e| match e {
        CoordinatorEvent::MembersChanged(m) if m.len() == 2 => Some(()),
        _ => None,
    })
    .await;
    // It must be reported gone soon after one lease time.
    let members = next_event(&mut rx, LAPSE + LEASE, |e| match e {
        CoordinatorEvent::MembersChanged(m) if m.len() == 1 => Some(m.clone()),
        _ => None,
    })
    .await;
    assert_eq!(members[0].id, node("a"));
    let took = b_joining.elapsed();
    assert!(
        took >= LEASE,
        "reported gone {took:?} after its join, within the lease"
    );
    println!("lapse seen by a watcher after {took:?} (lease {LEASE:?})");
    fleet.cleanup().await;
}

/// The next holder announced for `file`, within a second.
async fn next_holder(rx: &mut broadcast::Receiver<CoordinatorEvent>, file: &str) -> Option<NodeId> {
    next_event(rx, Duration::from_secs(1), |e| match e {
        CoordinatorEvent::LeaseChanged { file: f, holder } if f == file => Some(holder.clone()),
        _ => None,
    })
    .await
}

pub async fn watchers_see_leases_and_messages(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let mut rx = c2.watch().await.unwrap();
    let _a = live(&c1, "a").await;
    let la = c1.acquire("doc.1", &node("a")).await.unwrap();
    let holder = next_holder(&mut rx, "doc.1").await;
    assert_eq!(holder, Some(node("a")));
    c1.release(&la).await.unwrap();
    let holder = next_holder(&mut rx, "doc.1").await;
    assert_eq!(holder, None);

    let sent = Instant::now();
    c1.publish("signed-out", b"token-hash".to_vec())
        .await
        .unwrap();
    let payload = next_event(&mut rx, Duration::from_secs(1), |e| match e {
        CoordinatorEvent::Message { topic, payload } if topic == "signed-out" => {
            Some(payload.clone())
        }
        _ => None,
    })
    .await;
    assert_eq!(payload, b"token-hash");
    println!("message delivered after {:?}", sent.elapsed());
    fleet.cleanup().await;
}
