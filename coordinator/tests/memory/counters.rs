//! Fleet-wide counters: a limit across nodes, and slots that belong to a membership.

use atrium_coordinator::{Coordinator, CoordinatorError};
use tokio::time::advance;

use crate::{a_and_b_joined, coordinator, member, node};

#[tokio::test(start_paused = true)]
async fn count_up_respects_the_limit_across_nodes() {
    let (c, _, a, b) = a_and_b_joined().await;
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
