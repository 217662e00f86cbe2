//! Small patches that rewrite large nodes (the sixth review: 4 edit-key sockets sending
//! 1.5 KB patches of one `set` on each of 20 nodes of 1 MB made the node rewrite 48 GB in
//! 17 s; its worker held up every room's saving, and people editing other files were
//! closed 1013 after 5 s without a save).

use super::*;

/// Four edit-key sockets of a free account's file of eight 1 MB nodes send patches of one
/// `set` on each node, 60 a second each, for six seconds: what the sets rewrite comes from
/// the room's allowance (32 MiB a second after 64 MiB), the rest is refused `too-large`,
/// and the editors of another file on the node keep editing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sets_on_large_nodes_cannot_hold_up_other_rooms() {
    rewrite_attack(
        1,
        8,
        4,
        "4 edit-key sockets send sets on eight 1 MB nodes, 60 a second each",
    )
    .await;
}

/// The same spread over four files of one free account, two sockets each (the re-check of
/// the sixth review: twenty files of one account rewrote 11 GB in 15 s, 0.4 of a core,
/// each room within its own allowance). The files of one account share one room's
/// allowance: what all of them rewrite stays within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sets_spread_over_an_accounts_files_share_its_allowance() {
    rewrite_attack(
        4,
        4,
        2,
        "2 edit-key sockets on each of 4 files of one account send sets on four 1 MB nodes",
    )
    .await;
}

/// `files` files of one new account, each of `nodes` nodes of 1 MB, with `sockets` edit-key
/// sockets on each sending a patch of one `set` on every node 60 times a second: the
/// patches acked rewrite at most one room's allowance over the attack.
async fn rewrite_attack(files: usize, nodes: usize, sockets: usize, case_name: &str) {
    let (_serial, r, mut probe, base) = case(&[]).await;
    let port = r.node.port;
    let attacker = new_account(&r.node, "rewriter").await;
    let big = "b".repeat(1_000_000);
    let doc: serde_json::Map<String, Value> = (0..nodes)
        .map(|k| (format!("b{k}"), json!({"t": big})))
        .collect();
    let mut senders = Vec::new();
    for f in 0..files {
        let name = format!("Large nodes {f}");
        let created =
            create_file(&r.node, &attacker, &name, Some(Value::Object(doc.clone()))).await;
        let id = s(&created["id"]).to_string();
        set_link(&r.node, &attacker, &id, "edit").await;
        let edit_key = s(&created["edit_key"]).to_string();
        for _ in 0..sockets {
            senders.push(Some(Sender::join(port, &id, &Hello::key(&edit_key)).await));
        }
    }
    let senders = Mutex::new(senders);
    let cpu0 = cpu_seconds(r.node.pid());
    let (answers, during, secs) = attack(&mut probe, files * sockets, |k, done| {
        let mut sender = senders.lock().unwrap()[k].take().expect("once");
        tokio::spawn(async move {
            let (mut id, mut sent) = (1u64, 0u64);
            while !done.load(Ordering::SeqCst) {
                let ops: Vec<Value> = (0..nodes)
                    .map(|n| json!({"op": "set", "id": format!("b{n}"), "props": {"x": id}}))
                    .collect();
                let patch = json!({"type": "patch", "id": id, "ops": ops}).to_string();
                sender.raw.text(&patch).await;
                id += 1;
                sent += 1;
                tokio::time::sleep(Duration::from_millis(16)).await;
            }
            let mut answers = HashMap::<String, u64>::new();
            while let Got::Text(m) = sender.raw.next(Duration::from_millis(500)).await {
                let what = match m["type"].as_str() {
                    Some("reject") => format!("reject {}", s(&m["code"])),
                    Some(other) => other.to_string(),
                    None => continue,
                };
                *answers.entry(what).or_insert(0) += 1;
            }
            (sent, answers)
        })
    })
    .await;
    let cpu = cpu_seconds(r.node.pid()) - cpu0;
    let mut seen = HashMap::<String, u64>::new();
    for (_, a) in &answers {
        for (k, v) in a {
            *seen.entry(k.clone()).or_insert(0) += v;
        }
    }
    let acked = seen.get("ack").copied().unwrap_or(0);
    report(
        case_name,
        &base,
        &during,
        json!({"answers": seen, "sent": answers.iter().map(|(n, _)| n).sum::<u64>(),
               "seconds": secs, "node_cores": cpu / secs}),
    );
    // Each patch rewrites the nodes as stored (a little over 1 MB each): the burst's worth
    // and the rate's over the run, with two seconds' slack for a room still working through
    // what came before the end on a busy machine.
    const MIB: f64 = 1024.0 * 1024.0;
    let per_patch = nodes as f64 * (big.len() + 16) as f64;
    let allowed = (64.0 * MIB + 32.0 * MIB * (secs + 2.0)) / per_patch;
    assert!(
        (acked as f64) <= allowed,
        "{acked} patches of {nodes} MB of rewriting acked in {secs:.1} s (allowed {allowed:.0}; {seen:?})"
    );
    assert!(seen.contains_key("reject too-large"), "{seen:?}");
    probe.settle().await;
}
