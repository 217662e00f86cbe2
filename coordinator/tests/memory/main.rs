//! The in-memory backend against the contract of the `Coordinator` trait.

use std::time::Duration;

use atrium_coordinator::{
    Coordinator, CoordinatorError, CoordinatorSettings, Member, MemoryCoordinator, NodeId,
};
use tokio::time::advance;

const MS: Duration = Duration::from_millis(1);

fn node(id: &str) -> NodeId {
    NodeId::parse(id).unwrap()
}

fn coordinator() -> (MemoryCoordinator, CoordinatorSettings) {
    let settings = CoordinatorSettings::default();
    (MemoryCoordinator::new(settings), settings)
}

fn member(id: &str, draining: bool) -> Member {
    Member {
        id: node(id),
        address: format!("{id}.internal:8080"),
        draining,
    }
}

/// Joins every node of `ids`.
async fn joined(c: &MemoryCoordinator, ids: &[&str]) {
    for id in ids {
        c.join(member(id, false)).await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn a_lease_is_held_while_its_holder_lives_and_free_when_it_lapses() {
    let (c, s) = coordinator();
    let (a, b) = (node("a"), node("b"));
    joined(&c, &["a", "b"]).await;
    let la = c.acquire("f1", &a).await.unwrap();
    assert_eq!(la.node, a);
    assert_eq!(
        c.acquire("f1", &b).await.unwrap_err(),
        CoordinatorError::Held { holder: a.clone() }
    );
    assert_eq!(c.holder("f1").await.unwrap(), Some(a.clone()));

    // Both heartbeat for many lease times, with no renewal: a keeps the file.
    for _ in 0..30 {
        advance(s.heartbeat).await;
        c.heartbeat(&a, false).await.unwrap();
        c.heartbeat(&b, false).await.unwrap();
    }
    assert!(
        c.acquire("f1", &b).await.is_err(),
        "still held by its live holder"
    );

    // a falls silent: just before its membership lapses the lease is held, then it is free.
    advance(s.heartbeat).await;
    c.heartbeat(&b, false).await.unwrap();
    advance(s.lease - s.heartbeat - MS).await;
    assert!(
        c.acquire("f1", &b).await.is_err(),
        "held just before the lapse"
    );
    advance(MS).await;
    assert_eq!(c.holder("f1").await.unwrap(), None);
    let lb = c.acquire("f1", &b).await.unwrap();
    assert!(lb.epoch > la.epoch);
    assert_eq!(c.renew(&la).await.unwrap_err(), CoordinatorError::Lost);
    assert_eq!(c.holder("f1").await.unwrap(), Some(b));
}

#[tokio::test(start_paused = true)]
async fn a_node_that_joins_again_after_a_lapse_holds_nothing_from_before() {
    let (c, s) = coordinator();
    let a = node("a");
    joined(&c, &["a"]).await;
    let first = c.acquire("f1", &a).await.unwrap();
    advance(s.lease).await;
    assert_eq!(
        c.heartbeat(&a, false).await.unwrap_err(),
        CoordinatorError::Lost
    );
    let mut rejoins = c.rejoins();
    joined(&c, &["a"]).await;
    assert!(
        rejoins.has_changed().unwrap(),
        "a new incarnation is reported"
    );
    assert_eq!(c.holder("f1").await.unwrap(), None);
    assert_eq!(c.renew(&first).await.unwrap_err(), CoordinatorError::Lost);
    let again = c.acquire("f1", &a).await.unwrap();
    assert!(again.epoch > first.epoch, "taken afresh");
    // Joining again while live keeps the incarnation and its leases.
    rejoins.mark_unchanged();
    joined(&c, &["a"]).await;
    assert!(!rejoins.has_changed().unwrap());
    assert_eq!(c.acquire("f1", &a).await.unwrap().epoch, again.epoch);
}

#[tokio::test(start_paused = true)]
async fn only_live_members_take_leases() {
    let (c, _) = coordinator();
    assert_eq!(
        c.acquire("f1", &node("a")).await.unwrap_err(),
        CoordinatorError::Lost
    );
    joined(&c, &["a"]).await;
    c.acquire("f1", &node("a")).await.unwrap();
    c.leave(&node("a")).await.unwrap();
    assert_eq!(
        c.holder("f1").await.unwrap(),
        None,
        "leaving frees every lease"
    );
}

#[tokio::test(start_paused = true)]
async fn renewing_confirms_a_lease_and_keeps_its_epoch() {
    let (c, s) = coordinator();
    let (a, b) = (node("a"), node("b"));
    joined(&c, &["a", "b"]).await;
    let mut lease = c.acquire("f1", &a).await.unwrap();
    for _ in 0..10 {
        advance(s.heartbeat).await;
        c.heartbeat(&a, false).await.unwrap();
        c.heartbeat(&b, false).await.unwrap();
        let renewed = c.renew(&lease).await.unwrap();
        assert_eq!(renewed.epoch, lease.epoch);
        assert!(renewed.expires_at > lease.expires_at);
        lease = renewed;
    }
    assert!(matches!(
        c.acquire("f1", &b).await,
        Err(CoordinatorError::Held { .. })
    ));
    // A renewal after the holder's membership lapsed is refused even though nobody took
    // the file.
    advance(s.lease).await;
    assert_eq!(c.renew(&lease).await.unwrap_err(), CoordinatorError::Lost);
}

#[tokio::test(start_paused = true)]
async fn release_lets_a_successor_in_at_once() {
    let (c, _) = coordinator();
    let (a, b) = (node("a"), node("b"));
    joined(&c, &["a", "b"]).await;
    let la = c.acquire("f1", &a).await.unwrap();
    c.release(&la).await.unwrap();
    assert_eq!(c.holder("f1").await.unwrap(), None);
    let lb = c.acquire("f1", &b).await.unwrap();
    assert!(lb.epoch > la.epoch);

    // Releasing a stale lease again is Ok and must not touch the successor's.
    c.release(&la).await.unwrap();
    assert_eq!(c.holder("f1").await.unwrap(), Some(b.clone()));
    c.release(&lb).await.unwrap();
    let la2 = c.acquire("f1", &a).await.unwrap();
    c.release(&lb).await.unwrap();
    assert_eq!(c.holder("f1").await.unwrap(), Some(a));
    assert!(la2.epoch > lb.epoch);
}

#[tokio::test(start_paused = true)]
async fn epochs_only_grow() {
    let (c, s) = coordinator();
    let (a, b) = (node("a"), node("b"));
    let mut last = 0;
    for round in 0..6 {
        // One of the two is alive each round; the other's leases lapsed with it.
        let who = if round % 2 == 0 { &a } else { &b };
        c.join(member(who.as_str(), false)).await.unwrap();
        for file in ["f1", "f2"] {
            let lease = c.acquire(file, who).await.unwrap();
            assert!(lease.epoch > last, "round {round} {file}");
            last = lease.epoch;
            if round % 3 == 0 {
                c.release(&lease).await.unwrap();
            }
        }
        advance(s.lease).await;
    }
    // Taking again a lease one already holds keeps its epoch.
    c.join(member("a", false)).await.unwrap();
    let first = c.acquire("f3", &a).await.unwrap();
    advance(s.heartbeat).await;
    c.heartbeat(&a, false).await.unwrap();
    let again = c.acquire("f3", &a).await.unwrap();
    assert_eq!(again.epoch, first.epoch);
    assert!(again.expires_at > first.expires_at);
    assert!(c.renew(&first).await.is_ok(), "the same lease, still ours");
}

#[tokio::test(start_paused = true)]
async fn membership_lapses_without_heartbeats_and_reports_draining() {
    let (c, s) = coordinator();
    c.join(member("a", false)).await.unwrap();
    c.join(member("b", true)).await.unwrap();
    let mut seen = c.members().await.unwrap();
    seen.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(seen, vec![member("a", false), member("b", true)]);

    // a heartbeats and starts draining; b falls silent.
    for _ in 0..4 {
        advance(s.heartbeat).await;
        c.heartbeat(&node("a"), true).await.unwrap();
    }
    assert_eq!(c.members().await.unwrap(), vec![member("a", true)]);
    assert_eq!(
        c.heartbeat(&node("b"), false).await.unwrap_err(),
        CoordinatorError::Lost
    );
    c.join(member("b", false)).await.unwrap();
    assert_eq!(c.members().await.unwrap().len(), 2);

    c.leave(&node("a")).await.unwrap();
    assert_eq!(c.members().await.unwrap(), vec![member("b", false)]);
    assert_eq!(
        c.heartbeat(&node("a"), false).await.unwrap_err(),
        CoordinatorError::Lost
    );
}

#[tokio::test(start_paused = true)]
async fn count_up_respects_the_limit_across_nodes() {
    let (c, _) = coordinator();
    let (a, b) = (node("a"), node("b"));
    c.join(member("a", false)).await.unwrap();
    c.join(member("b", false)).await.unwrap();
    assert!(c.count_up("acct", &a, 3).await.unwrap());
    assert!(c.count_up("acct", &a, 3).await.unwrap());
    assert!(c.count_up("acct", &b, 3).await.unwrap());
    assert!(!c.count_up("acct", &b, 3).await.unwrap());
    assert!(!c.count_up("acct", &a, 3).await.unwrap());
    assert_eq!(c.count("acct").await.unwrap(), 3);
    assert!(
        c.count_up("other", &b, 3).await.unwrap(),
        "counters are separate"
    );

    c.count_down("acct", &a).await.unwrap();
    assert_eq!(c.count("acct").await.unwrap(), 2);
    assert!(c.count_up("acct", &b, 3).await.unwrap());
    // A node giving back slots it does not hold changes nothing.
    c.count_down("acct", &node("c")).await.unwrap();
    c.count_down("nothing", &a).await.unwrap();
    assert_eq!(c.count("acct").await.unwrap(), 3);
    assert!(!c.count_up("acct", &a, 0).await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_lapsed_or_departed_nodes_slots_stop_counting() {
    let (c, s) = coordinator();
    let (a, b, d) = (node("a"), node("b"), node("d"));
    for id in ["a", "b", "d"] {
        c.join(member(id, false)).await.unwrap();
    }
    for _ in 0..2 {
        assert!(c.count_up("acct", &a, 4).await.unwrap());
    }
    assert!(c.count_up("acct", &b, 4).await.unwrap());
    assert!(c.count_up("acct", &d, 4).await.unwrap());
    assert!(!c.count_up("acct", &b, 4).await.unwrap());

    c.leave(&d).await.unwrap();
    assert_eq!(c.count("acct").await.unwrap(), 3);

    // a stops heartbeating (killed); b goes on.
    for _ in 0..4 {
        advance(s.heartbeat).await;
        c.heartbeat(&b, false).await.unwrap();
    }
    assert_eq!(c.count("acct").await.unwrap(), 1);
    for _ in 0..3 {
        assert!(c.count_up("acct", &b, 4).await.unwrap());
    }
    assert!(!c.count_up("acct", &b, 4).await.unwrap());

    // A lapsed node cannot take slots; when it joins again its old ones stay gone.
    assert_eq!(
        c.count_up("acct", &a, 10).await.unwrap_err(),
        CoordinatorError::Lost
    );
    c.join(member("a", false)).await.unwrap();
    assert_eq!(c.count("acct").await.unwrap(), 4);
    c.count_down("acct", &b).await.unwrap();
    assert!(c.count_up("acct", &a, 4).await.unwrap());
    assert_eq!(c.count("acct").await.unwrap(), 4);
}

#[tokio::test]
async fn bad_input_is_refused() {
    let (c, _) = coordinator();
    let a = node("a");
    assert!(matches!(
        c.acquire("", &a).await,
        Err(CoordinatorError::Invalid(_))
    ));
    assert!(matches!(
        c.acquire(&"f".repeat(300), &a).await,
        Err(CoordinatorError::Invalid(_))
    ));
    let mut bad = member("a", false);
    bad.address.clear();
    assert!(matches!(
        c.join(bad).await,
        Err(CoordinatorError::Invalid(_))
    ));
    c.join(member("a", false)).await.unwrap();
    assert!(matches!(
        c.count_up("", &a, 5).await,
        Err(CoordinatorError::Invalid(_))
    ));
}
