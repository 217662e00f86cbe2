//! Membership lapses without heartbeats and carries the draining flag; bad input is refused.

use atrium_coordinator::{Coordinator, CoordinatorError};
use tokio::time::advance;

use crate::{coordinator, member, node};

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
