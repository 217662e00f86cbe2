//! At least once: across `kill -9` of the sender and across the receiver being down;
//! and a dead endpoint never slows a room.

use super::*;

/// An event committed with its append, the node killed before delivering it, delivered
/// by the node started again on the same data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_committed_before_kill_9_is_delivered_after_restart() {
    let hooks = Receiver::start().await;
    hooks.answer(503);
    let data = tempfile::tempdir().expect("temp dir");
    let (mut node, key) = node_with_key(Some(data.path()), &[]).await;
    let (_, secret) = endpoint(&node, &key, &hooks.url(), Some(&["file.updated"])).await;
    let (owner, file) = board(&node).await;
    let (mut ann, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
    for i in 1..=3u64 {
        ann.patch_acked(i, vec![put(&format!("n{i}"), json!({"i": i}))])
            .await;
    }
    // Tried (and refused) at least once, so the event was committed and picked up.
    let deadline = Instant::now() + Duration::from_secs(10);
    while hooks.all().is_empty() {
        assert!(Instant::now() < deadline, "no try reached the receiver");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    node.kill9();
    assert!(hooks.delivered().is_empty());
    hooks.answer(200);
    let _node = Node::start_in(data.path(), &QUICK).await;
    let got = hooks
        .wait_for(
            Duration::from_secs(20),
            "file.updated after the restart",
            |g| !g.is_empty(),
        )
        .await;
    assert_eq!(versions(&of_file(&got, &file)), vec![3]);
    assert!(verify(&secret, &got[0]));
}

/// The receiver down (connections refused) for a while, then back: everything sent
/// while it was down arrives, in order per file, none lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_arrives_after_the_receiver_comes_back() {
    let mut hooks = Receiver::start().await;
    let (node, key) = node_with_key(None, &[("ATRIUM_WEBHOOK_DEBOUNCE_MS", "0")]).await;
    let (_, secret) = endpoint(
        &node,
        &key,
        &hooks.url(),
        Some(&["person.joined", "person.left", "file.updated"]),
    )
    .await;
    hooks.down();
    let (owner, file) = board(&node).await;
    for round in 0..5u64 {
        let (mut c, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
        c.patch_acked(round + 1, vec![put(&format!("n{round}"), json!({}))])
            .await;
        c.close().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Down for several backoff rounds (the retry delay capped at 1 s here, as a day's
    // cap of an hour would be in production).
    wait_metric(
        &node,
        "atrium_webhook_retries_total",
        &[],
        |v| v >= 5.0,
        Duration::from_secs(20),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(hooks.delivered().is_empty());
    hooks.up().await;
    let got = hooks
        .wait_for(
            Duration::from_secs(30),
            "all 5 joins and leaves and version 5",
            |g| {
                let mine = of_file(g, &file);
                let k = kinds(&mine);
                k.iter().filter(|k| *k == "person.joined").count() >= 5
                    && k.iter().filter(|k| *k == "person.left").count() >= 5
                    && versions(&mine).last() == Some(&5)
            },
        )
        .await;
    let mine = of_file(&got, &file);
    let people: Vec<&str> = mine
        .iter()
        .filter(|g| g.kind().starts_with("person."))
        .map(|g| g.kind())
        .collect();
    // Joined, left, joined, left...: the order they happened in.
    for pair in people.chunks(2) {
        assert_eq!(pair, ["person.joined", "person.left"], "{people:?}");
    }
    assert!(versions(&mine).windows(2).all(|w| w[0] < w[1]));
    assert!(mine.iter().all(|g| verify(&secret, g)));
    wait_metric(
        &node,
        "atrium_webhook_outbox_messages",
        &[],
        |v| v == 0.0,
        Duration::from_secs(10),
    )
    .await;
}

/// The relay's p99 between two people, over `n` patches.
async fn relay_p99(a: &mut Client, b: &mut Client, first: u64, n: u64) -> Duration {
    let mut took = Vec::with_capacity(n as usize);
    for i in first..first + n {
        let t0 = Instant::now();
        a.send_patch(i, vec![put(&format!("k{}", i % 20), json!({"i": i}))])
            .await;
        b.recv_type("patch", WAIT).await.expect("relayed");
        took.push(t0.elapsed());
        a.await_ack(i).await;
    }
    took.sort();
    took[(took.len() * 99 / 100).min(took.len() - 1)]
}

/// A hung endpoint (it takes the connection and never answers) with a long timeout,
/// and a flood of events for it: the room's relay p99 stays as it was without it, in
/// the same run (a ratio, not a time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_endpoint_does_not_slow_a_room() {
    let hooks = Receiver::start().await;
    hooks.answer(HANG);
    let (node, key) = node_with_key(
        None,
        &[
            ("ATRIUM_WEBHOOK_DEBOUNCE_MS", "0"),
            ("ATRIUM_WEBHOOK_TIMEOUT_MS", "30000"),
        ],
    )
    .await;
    let (owner, file) = board(&node).await;
    let (mut a, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
    let (mut b, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
    let _ = b.collect_for(Duration::from_millis(300)).await;
    let n = 200;
    relay_p99(&mut a, &mut b, 1, 20).await; // warm up
    let without = relay_p99(&mut a, &mut b, 21, n).await;
    endpoint(&node, &key, &hooks.url(), None).await;
    // Other rooms' events flood the endpoint too: joins and leaves in 20 more files.
    for _ in 0..20 {
        let (o, f) = board(&node).await;
        let (c, _) = Client::join(&node, &f, &Hello::token(&o)).await;
        c.close().await;
    }
    let with = relay_p99(&mut a, &mut b, 21 + n, n).await;
    assert!(
        !hooks.all().is_empty(),
        "the hung endpoint was being called during the run"
    );
    let ratio = with.as_secs_f64() / without.as_secs_f64().max(0.000_5);
    figure(json!({
        "webhooks_dead_endpoint": {
            "relay_p99_ms_without": without.as_secs_f64() * 1e3,
            "relay_p99_ms_with": with.as_secs_f64() * 1e3,
            "ratio": ratio,
        }
    }));
    // Generous: the machine is shared; a room blocked on the endpoint would be 30 s.
    assert!(
        with <= without * 4 + Duration::from_millis(20),
        "relay p99 {with:?} with a dead endpoint against {without:?} without"
    );
}

/// SIGTERM: the rooms' last events (`room.closed` with reason `shutdown`) are recorded
/// before the node exits, and sent by the node started again on the same data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_node_records_its_rooms_closing() {
    let hooks = Receiver::start().await;
    hooks.answer(503);
    let data = tempfile::tempdir().expect("temp dir");
    let (mut node, key) = node_with_key(Some(data.path()), &[]).await;
    endpoint(
        &node,
        &key,
        &hooks.url(),
        Some(&["room.opened", "room.closed"]),
    )
    .await;
    let (owner, file) = board(&node).await;
    let (_ann, _) = Client::join(&node, &file, &Hello::token(&owner)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while hooks.all().is_empty() {
        assert!(Instant::now() < deadline, "room.opened never tried");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    node.sigterm();
    assert!(node.wait_exit(Duration::from_secs(15)).await.is_some());
    hooks.answer(200);
    let _node = Node::start_in(data.path(), &QUICK).await;
    let got = hooks
        .wait_for(
            Duration::from_secs(20),
            "room.closed after the restart",
            |g| g.iter().any(|g| g.kind() == "room.closed"),
        )
        .await;
    let mine = of_file(&got, &file);
    assert_eq!(kinds(&mine), ["room.opened", "room.closed"]);
    assert_eq!(mine[1].json["data"]["reason"], "shutdown");
}

/// A guest with the view key reconnects in a loop while the app's endpoint is down. Each
/// join and leave was a `person.*` message in the outbox, and the endpoint's bound dropped
/// the oldest messages whatever they were, so the churn pushed out the file's pending
/// `file.updated`. Now a room records at most `ATRIUM_WEBHOOK_PERSON_EVENTS_PER_MINUTE`
/// of them, and the bound drops people's events before any file update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_churning_through_a_link_cannot_push_out_file_updates() {
    let mut hooks = Receiver::start().await;
    let (node, key) = node_with_key(
        None,
        &[
            ("ATRIUM_WEBHOOK_DEBOUNCE_MS", "0"),
            ("ATRIUM_WEBHOOK_MAX_QUEUED", "4"),
            ("ATRIUM_WEBHOOK_PERSON_EVENTS_PER_MINUTE", "4"),
        ],
    )
    .await;
    endpoint(&node, &key, &hooks.url(), None).await;
    hooks.down();
    let shared = shared_file(&node, "view").await;
    let (mut owner, _) = Client::join(&node, &shared.id, &Hello::token(&shared.owner)).await;
    for v in 1..=3u64 {
        owner
            .patch_acked(v, vec![put(&format!("n{v}"), json!({}))])
            .await;
    }
    for _ in 0..20 {
        let (guest, _) = Client::join(&node, &shared.id, &Hello::key(&shared.view_key)).await;
        guest.close().await;
    }
    // The room's bound: four person events recorded (the owner's join among them), the
    // other 37 dropped and counted.
    wait_metric(
        &node,
        "atrium_webhook_dropped_total",
        &[],
        |v| v >= 37.0,
        Duration::from_secs(10),
    )
    .await;
    // The endpoint's bound (checked every 2 s): people's events go first.
    tokio::time::sleep(Duration::from_secs(3)).await;
    hooks.up().await;
    let got = hooks
        .wait_for(Duration::from_secs(30), "version 3", |g| {
            versions(&of_file(g, &shared.id)).last() == Some(&3)
        })
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let got = hooks.delivered().into_iter().chain(got).collect::<Vec<_>>();
    let people = of_file(&got, &shared.id)
        .iter()
        .filter(|g| g.kind().starts_with("person."))
        .map(|g| g.json["data"].clone())
        .collect::<std::collections::HashSet<_>>()
        .len();
    assert!(people <= 4, "{people} person events reached the app");
}

/// A guest joining and leaving in a loop from one address used up the room's whole allowance
/// of `person.*` events, and the app stopped hearing who else came: each client address may
/// now take a quarter of it (all its sockets together), and the others' joins are still told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_churning_from_one_address_leaves_the_others_joins_told() {
    let hooks = Receiver::start().await;
    let (node, key) = node_with_key(
        None,
        &[
            ("ATRIUM_WEBHOOK_DEBOUNCE_MS", "0"),
            ("ATRIUM_WEBHOOK_PERSON_EVENTS_PER_MINUTE", "40"),
            TRUST_THE_TEST,
        ],
    )
    .await;
    endpoint(&node, &key, &hooks.url(), None).await;
    let shared = shared_file(&node, "view").await;
    let guest = Hello::key(&shared.view_key);
    let from = |address: &'static str| [("x-forwarded-for", address)];
    // 40 events from one address (20 joins and leaves, as one guest): a quarter is 10.
    for _ in 0..20 {
        let (c, _) = Client::join_with(&node, &shared.id, &guest, &from("203.0.113.7")).await;
        c.close().await;
    }
    // Then three people from other addresses, each named.
    let mut stay = Vec::new();
    for (n, address) in ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
        .into_iter()
        .enumerate()
    {
        let mut hello = Hello::key(&shared.view_key);
        hello.name = Some(format!("Visitor {n}"));
        stay.push(Client::join_with(&node, &shared.id, &hello, &from(address)).await);
    }
    let named = |g: &[Got], n: usize| {
        of_file(g, &shared.id).iter().any(|g| {
            g.kind() == "person.joined"
                && g.json["data"]["person"]["name"] == format!("Visitor {n}")
        })
    };
    let got = hooks
        .wait_for(Duration::from_secs(30), "the three visitors' joins", |g| {
            (0..3).all(|n| named(g, n))
        })
        .await;
    let churned = of_file(&got, &shared.id)
        .iter()
        .filter(|g| g.kind().starts_with("person.") && g.json["data"]["person"]["name"] == "Guest")
        .count();
    assert!(
        churned <= 10,
        "the churning address's quarter: {churned} events told"
    );
    wait_metric(
        &node,
        "atrium_webhook_dropped_total",
        &[],
        |v| v >= 30.0,
        Duration::from_secs(10),
    )
    .await;
}
