//! Membership lapses without heartbeats and carries the draining flag; counter slots
//! belong to a node's membership.

use atrium_coordinator::CoordinatorError;

use crate::fleet::{Backend, Fleet, LAPSE, LEASE};
use crate::support::{a_and_b_live, a_beating_b_silent, beat_as, eventually, ids, member, node};

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

/// A node found dead from outside is evicted at once: its files are free without waiting out
/// the lease. Eviction leaves alone a record with another address (the node came back
/// elsewhere) and a draining node; a node that was alive after all learns at its next
/// heartbeat and joins again as a new incarnation.
pub async fn an_evicted_node_frees_its_files_at_once(backend: Backend) {
    let (fleet, [c1, c2], [a_beats, _b]) = a_and_b_live(backend).await;
    let (a, b) = (node("a"), node("b"));
    let address = member("a", false).address;
    let held = c1.acquire("evicted 1", &a).await.unwrap();

    assert!(
        !c2.evict(&a, "a.elsewhere:8080").await.unwrap(),
        "another address"
    );
    let still = c2.acquire("evicted 1", &b).await.unwrap_err();
    assert_eq!(still, CoordinatorError::Held { holder: a.clone() });

    // a keeps heartbeating, yet once evicted its file is free at once, long before a lapse.
    assert!(c2.evict(&a, &address).await.unwrap());
    let taken = c2.acquire("evicted 1", &b).await.unwrap();
    assert!(taken.epoch > held.epoch, "{} > {}", taken.epoch, held.epoch);
    for c in [&c1, &c2] {
        eventually(LEASE, "a gone from the members", || async {
            ids(c).await == ["b"]
        })
        .await;
    }
    assert!(!c2.evict(&a, &address).await.unwrap(), "already gone");
    drop(a_beats);
    assert_eq!(
        c1.heartbeat(&a, false).await.unwrap_err(),
        CoordinatorError::Lost
    );
    assert_eq!(c1.renew(&held).await.unwrap_err(), CoordinatorError::Lost);

    // Back, and draining: a drain ends in leave, never in eviction.
    c1.join(member("a", true)).await.unwrap();
    assert!(!c2.evict(&a, &address).await.unwrap(), "draining");
    eventually(LEASE, "a back", || async { ids(&c2).await == ["a", "b"] }).await;
    fleet.cleanup().await;
}

pub async fn room_reports_count_only_while_their_node_lives(backend: Backend) {
    let mut fleet = Fleet::new(backend);
    let (c1, c2) = (fleet.instance().await, fleet.instance().await);
    let (a, b) = (node("a"), node("b"));
    let a_beats = a_beating_b_silent(&c1, &c2).await;
    c1.report_rooms(&a, b"a's rooms".to_vec()).await.unwrap();
    c2.report_rooms(&b, b"b's rooms, first".to_vec())
        .await
        .unwrap();
    c2.report_rooms(&b, b"b's rooms".to_vec()).await.unwrap();
    let mut seen = c2.room_reports().await.unwrap();
    seen.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
    assert_eq!(
        seen,
        [
            (a.clone(), b"a's rooms".to_vec()),
            (b.clone(), b"b's rooms".to_vec())
        ],
        "the latest report of each node"
    );
    let too_big = vec![b'x'; atrium_coordinator::MAX_ROOM_REPORT + 1];
    assert!(matches!(
        c1.report_rooms(&a, too_big).await,
        Err(CoordinatorError::Invalid(_))
    ));
    // b stops heartbeating: its report stops counting.
    eventually(LAPSE, "b's report stops counting", || async {
        let r = c1.room_reports().await.unwrap();
        r.len() == 1 && r[0].0 == a
    })
    .await;
    assert_eq!(
        c2.report_rooms(&b, b"late".to_vec()).await.unwrap_err(),
        CoordinatorError::Lost,
        "a lapsed node cannot report"
    );
    drop(a_beats);
    c1.leave(&a).await.unwrap();
    eventually(LEASE, "a's report gone with it", || async {
        c2.room_reports().await.unwrap().is_empty()
    })
    .await;
    fleet.cleanup().await;
}
