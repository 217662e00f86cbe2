use super::state::MIN_SWEEP;
use super::*;
use crate::{Coordinator, Member};

// Files that were served once and then abandoned must not pile up in the lease map.
#[tokio::test(start_paused = true)]
async fn lapsed_leases_are_swept_as_the_map_grows() {
    let c = MemoryCoordinator::default();
    let (a, b) = (NodeId::parse("a").unwrap(), NodeId::parse("b").unwrap());
    for id in [&a, &b] {
        let address = "127.0.0.1:1".to_owned();
        c.join(Member {
            id: id.clone(),
            address,
            draining: false,
        })
        .await
        .unwrap();
    }
    for i in 0..MIN_SWEEP - 1 {
        c.acquire(&format!("old{i}"), &a).await.unwrap();
    }
    // a dies; b lives on and takes new files.
    tokio::time::advance(c.settings().heartbeat).await;
    c.heartbeat(&b, false).await.unwrap();
    tokio::time::advance(c.settings().lease - c.settings().heartbeat).await;
    for i in 0..10 {
        c.acquire(&format!("new{i}"), &b).await.unwrap();
    }
    let st = c.inner.lock();
    assert_eq!(st.leases.len(), 10);
    assert_eq!(st.lease_sweep_at, MIN_SWEEP);
}
