//! Membership lapses without heartbeats and carries the draining flag; counter slots
//! belong to a node's membership.

use atrium_coordinator::CoordinatorError;

use crate::fleet::{Backend, Fleet, LAPSE, LEASE};
use crate::support::{a_beating_b_silent, beat_as, eventually, ids, member, node};

pub async fn membership_lapses_and_carries_draining(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let a_beats = a_beating_b_silent(&c1, &c2).await;

    drop(a_beats);
    c1.heartbeat(&node("a"), true).await.unwrap();
    let _a = beat_as(&c1, "a", true);
    let draining = || async {
        let seen = c2.members().await.unwrap();
        seen.iter().any(|m| m.id.as_str() == "a" && m.draining)
    };
    eventually(LEASE, "a seen draining", draining).await;
    let seen = c2.members().await.unwrap();
    let a = seen.iter().find(|m| m.id.as_str() == "a").unwrap();
    assert_eq!(a.address, "a.internal:8080");

    for c in [&c1, &c2] {
        eventually(LAPSE, "b lapsed", || async { ids(c).await == ["a"] }).await;
    }
    assert_eq!(
        c2.heartbeat(&node("b"), false).await.unwrap_err(),
        CoordinatorError::Lost
    );
    c1.leave(&node("a")).await.unwrap();
    eventually(LEASE, "a gone at once", || async {
        ids(&c2).await.is_empty()
    })
    .await;
    fleet.cleanup().await;
}

pub async fn counter_slots_vanish_with_their_node(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let (a, b) = (node("a"), node("b"));
    let _a = a_beating_b_silent(&c1, &c2).await;

    let acct = "sockets:acct 1";
    assert!(c1.count_up(acct, &a, 3).await.unwrap());
    assert!(c1.count_up(acct, &a, 3).await.unwrap());
    assert!(c2.count_up(acct, &b, 3).await.unwrap());
    assert!(!c1.count_up(acct, &a, 3).await.unwrap(), "at the limit");
    assert_eq!(c2.count(acct).await.unwrap(), 3);
    c1.count_down(acct, &a).await.unwrap();
    assert_eq!(c1.count(acct).await.unwrap(), 2);
    assert!(c1.count_up(acct, &a, 3).await.unwrap());

    // b stops heartbeating: its slot stops counting.
    eventually(LAPSE, "b's slot stops counting", || async {
        c1.count(acct).await.unwrap() == 2
    })
    .await;
    assert!(c1.count_up(acct, &a, 3).await.unwrap());
    assert_eq!(
        c2.count_up(acct, &b, 9).await.unwrap_err(),
        CoordinatorError::Lost
    );
    // Coming back, b starts with no slots.
    c2.join(member("b", false)).await.unwrap();
    eventually(LEASE, "b back", || async { ids(&c1).await == ["a", "b"] }).await;
    assert_eq!(c1.count(acct).await.unwrap(), 3);
    c2.count_down(acct, &b).await.unwrap();
    assert_eq!(
        c1.count(acct).await.unwrap(),
        3,
        "b had nothing to give back"
    );
    for _ in 0..3 {
        c1.count_down(acct, &a).await.unwrap();
    }
    assert_eq!(c2.count(acct).await.unwrap(), 0);
    assert!(!c1.count_up("other", &a, 0).await.unwrap());
    fleet.cleanup().await;
}
