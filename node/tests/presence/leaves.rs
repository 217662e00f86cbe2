//! People leaving together are announced in one leave.

use super::*;

/// Joins R (owner), X, Y and Z; drops X and Y at the same instant without a
/// close handshake, with R moving all along when `active`; asserts that R
/// and Z each get one `leave` naming both.
async fn drop_two_at_once(active: bool) {
    // 500 ms ticks: two sockets dropped at the same instant fall in one tick.
    let (node, f) = node_with_file(&[("ATRIUM_PRESENCE_HZ", "2")]).await;
    let [(mut r, _), (x, wx), (y, wy), (mut z, _)] = Client::join_each(
        &node,
        &f.id,
        [
            f.by_owner(),
            f.by_edit_key(),
            f.by_view_key(),
            f.by_view_key(),
        ],
    )
    .await;
    let (yx, yy) = (you(&wx), you(&wy));
    r.drain_until_quiet(Duration::from_millis(800), Duration::from_secs(10))
        .await;
    z.drain_until_quiet(Duration::from_millis(100), Duration::from_secs(10))
        .await;
    if active {
        // R keeps the room ticking for a while before and after the drop.
        for i in 0..30u64 {
            r.send_presence(json!({"page": "p1", "cursor": [i, 0]}))
                .await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    // Both gone at once, without a close handshake.
    drop(x);
    drop(y);
    if active {
        for i in 0..30u64 {
            r.send_presence(json!({"cursor": [i, 1]})).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    let mut want = vec![yx.as_str(), yy.as_str()];
    want.sort();
    for (who, cl) in [("owner", &mut r), ("z", &mut z)] {
        let m = cl
            .recv_type("leave", WAIT)
            .await
            .unwrap_or_else(|| panic!("{who} got no leave"));
        let mut ids: Vec<&str> = m["ids"]
            .as_array()
            .unwrap_or_else(|| panic!("leave without ids: {m}"))
            .iter()
            .map(s)
            .collect();
        ids.sort();
        assert_eq!(ids, want, "{who}: both leavers in one leave: {m}");
        let later = cl.collect_for(Duration::from_millis(1200)).await;
        assert!(
            later.iter().all(|m| m["type"] != "leave"),
            "{who}: a second leave after the batched one: {later:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_leaving_together_are_announced_in_one_leave() {
    drop_two_at_once(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_dropped_together_from_a_quiet_room_are_announced_in_one_leave() {
    drop_two_at_once(false).await;
}
