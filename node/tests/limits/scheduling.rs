//! How a running node's threads are scheduled (`priority.rs`).

use super::*;
use atrium_node::priority::SHORT_SLICE_NANOS;

/// Each thread of the process `pid`: its name and its `/proc/.../sched` text.
fn threads(pid: i32) -> Vec<(String, String)> {
    let dir = format!("/proc/{pid}/task");
    std::fs::read_dir(&dir)
        .expect("the node's threads")
        .filter_map(|t| {
            let t = t.ok()?.path();
            let name = std::fs::read_to_string(t.join("comm")).ok()?;
            let sched = std::fs::read_to_string(t.join("sched")).ok()?;
            Some((name.trim().to_owned(), sched))
        })
        .collect()
}

fn slice_nanos(sched: &str) -> Option<u64> {
    sched
        .lines()
        .find_map(|l| l.strip_prefix("se.slice"))
        .and_then(|v| v.trim_start_matches([' ', ':']).trim().parse().ok())
}

/// A relay is a chain of wake-ups; on a busy machine each would wait for the running
/// task's slice to end. The node's runtime threads ask for the kernel's shortest slice
/// (where the kernel reports slices: Linux 6.12 and later).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_threads_ask_for_a_short_slice() {
    let (node, f) = node_with_file(&[]).await;
    // A patch, so the blocking threads that commit have started as well.
    let [(mut a, _)] = Client::join_each(&node, &f.id, [f.by_owner()]).await;
    a.patch_acked(1, vec![put("n", json!({}))]).await;
    let all = threads(node.pid());
    let runtime: Vec<_> = all
        .iter()
        .filter(|(name, _)| name.starts_with("tokio-rt"))
        .collect();
    assert!(
        !runtime.is_empty(),
        "no runtime threads in {:?}",
        all.iter().map(|t| &t.0).collect::<Vec<_>>()
    );
    if slice_nanos(&runtime[0].1).is_none() {
        eprintln!("this kernel does not report slices; nothing to check");
        return;
    }
    for (name, sched) in runtime {
        assert_eq!(
            slice_nanos(sched),
            Some(SHORT_SLICE_NANOS),
            "{name}: {sched}"
        );
    }
    // Threads outside the runtime (the main thread, SQLite's checkpoints) keep the default.
    let main = all
        .iter()
        .find(|(name, _)| name == "atrium-node")
        .expect("the main thread");
    assert_ne!(slice_nanos(&main.1), Some(SHORT_SLICE_NANOS));
}
