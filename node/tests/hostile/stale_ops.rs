//! Stale op ids.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_op_ids_are_acked_and_never_applied() {
    let _serial = SERIAL.lock().await;
    let mut r = room(&[("ATRIUM_ROOM_OPS_BYTES", "300000")]).await;
    let mut probe = Probe::join(&r).await;
    let hello = Hello::key(&r.edit_key);
    let (mut e, _) = Client::join(&r.node, &r.id, &hello).await;
    let mut v_of = HashMap::new();
    for id in 1..=5u64 {
        let v = e
            .patch_acked(id, vec![put(&format!("e{id}"), json!({"n": id}))])
            .await;
        v_of.insert(id, v);
    }
    let base = probe.sample(30).await;
    let expected =
        json!({"e1": {"n": 1}, "e2": {"n": 2}, "e3": {"n": 3}, "e4": {"n": 4}, "e5": {"n": 5}});

    // Resends of ids 1..=5 with different ops, in a loop, while the
    // bystanders measure: each is acked with its original version.
    let done = Arc::new(AtomicBool::new(false));
    let resender = {
        let (done, v_of) = (done.clone(), v_of.clone());
        tokio::spawn(async move {
            let mut resent = 0u64;
            let until = Instant::now() + Duration::from_secs(2);
            while Instant::now() < until {
                for id in 1..=5u64 {
                    e.send_patch(
                        id,
                        vec![
                            put(&format!("e{id}"), json!({"stale": true})),
                            delete("probe"),
                        ],
                    )
                    .await;
                    let v = e.await_ack(id).await;
                    assert_eq!(v, v_of[&id], "a resent id is acked with its version");
                    resent += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            done.store(true, Ordering::SeqCst);
            (resent, e)
        })
    };
    let during = probe.sample_while(&done, 30, 400).await;
    let (resent, e) = resender.await.expect("resender");
    e.close().await;
    let by_others: usize = probe.seen.lock().unwrap().patches_by.values().sum();
    assert_eq!(by_others, 5, "resent patches were relayed");
    assert_untouched(&r, &probe, 5, expected.clone()).await;
    let _ = &expected;

    // From a new socket of the same client, once the resume ring has let go
    // of those versions (ROOM_OPS_BYTES 300,000; four patches of 100 KB):
    // acked with the current version, not applied.
    let (mut big, _) = Client::join(&r.node, &r.id, &Hello::key(&r.edit_key)).await;
    let blob = "b".repeat(100_000);
    for id in 1..=4 {
        big.patch_acked(id, vec![put("blob", json!({ "b": blob }))])
            .await;
    }
    big.patch_acked(5, vec![delete("blob")]).await;
    big.close().await;
    let (mut again, _) = Client::join(&r.node, &r.id, &hello).await;
    again
        .send_patch(1, vec![put("e1", json!({"stale": true}))])
        .await;
    let v = again.await_ack(1).await;
    assert_eq!(
        v,
        probe.next + 10,
        "out of the ring: acked with the current version"
    );
    again.close().await;

    // And after a kill -9 and a restart: the highest id is durable.
    probe.settle().await;
    drop(probe);
    r.node.kill9();
    let data = r.node.data.clone();
    let mut all: Vec<(&str, &str)> = FAST_HASH.to_vec();
    all.push(("ATRIUM_ROOM_OPS_BYTES", "300000"));
    let node2 = Node::start_in(&data, &all).await;
    let (mut after, _) = Client::join(&node2, &r.id, &hello).await;
    after
        .send_patch(5, vec![put("e5", json!({"stale": true}))])
        .await;
    after.await_ack(5).await;
    let (_, doc) = get_doc(&node2, &r.owner, &r.id).await;
    for id in 1..=5 {
        assert_eq!(
            doc[format!("e{id}")],
            json!({"n": id}),
            "a stale patch was applied"
        );
    }
    report(
        "stale op ids (resends of acked ids, from the same and a new socket, after a restart)",
        &base,
        &during,
        json!({"resent": resent, "answer": "ack with the original version (or the current one once out of the ring); never applied or relayed"}),
    );
}
