//! Faults on one router of several: one killed (`router-of-two`), and one cut from the
//! coordinator while a node dies (`stale-router`).

use super::*;
use crate::report::{RouterServed, StaleRouter};

/// The router these faults break: the last one, so the first (through which the run sets up,
/// samples and reads the final documents) stays whole, and with two routers each has half
/// the clients either way.
fn broken(c: &Cluster) -> usize {
    c.routers.len() - 1
}

/// `router-of-two`: `kill -9` of one router; its clients go on through the others; started
/// again after `hold`. Returns when it struck.
pub(super) async fn router_of_two(
    c: &mut Cluster,
    hold: Duration,
    done: &mut Injection,
) -> Result<Instant> {
    let i = broken(c);
    let name = c.routers[i].name.clone();
    done.target = name.clone();
    c.kill_router(i);
    let started = Instant::now();
    tokio::time::sleep(hold).await;
    c.restart_router(i).await?;
    done.lasted_ms = ms(started.elapsed());
    done.steps.push(format!(
        "{name} killed (SIGKILL), started again and seeing every node after {:.0} ms",
        done.lasted_ms
    ));
    Ok(started)
}

/// `stale-router`: how long the cut stands before the node is killed.
const SETTLE: Duration = Duration::from_secs(1);

/// `stale-router`: one router cut from the coordinator, then, a second later, `victim` (the
/// busiest node) killed with -9 while that router's view of the ring is stale; healed `hold`
/// after the kill. Returns the kill's time.
pub(super) async fn stale_router(
    c: &mut Cluster,
    victim: (String, u64),
    files: &[FileKeys],
    hold: Duration,
    done: &mut Injection,
) -> Result<Instant> {
    let i = broken(c);
    let (victim, held) = victim;
    done.target = victim.clone();
    done.target_rooms = held;
    done.stale_router = Some(i);
    let url = c.node_mut(&victim).context("no such node")?.url.clone();
    done.dead_files = files_served_by(&url, files).await;
    let cut = c.cut_router_from_coordinator(i)?;
    // The cut drops what the router sends, not what the coordinator sends it: the watch's
    // updates keep arriving until the coordinator's unacknowledged segments stall its side of
    // the connection (a retransmission timeout, 200 ms on loopback). Killed sooner, the node's
    // end could still reach the router, whose view would then not be stale at all.
    tokio::time::sleep(SETTLE).await;
    c.node_mut(&victim)
        .context("the chosen node is gone")?
        .process
        .kill9();
    let started = Instant::now();
    tokio::time::sleep(hold).await;
    c.heal_links()?;
    done.lasted_ms = ms(started.elapsed());
    done.steps.push(format!(
        "{cut}; {} ms later {victim} killed (SIGKILL) holding {held} rooms ({} of the run's files); \
         healed after {:.0} ms",
        SETTLE.as_millis(),
        done.dead_files.len(),
        done.lasted_ms
    ));
    Ok(started)
}

/// The files `node` serves now (their indices in `files`): asked directly, a node answers a
/// file another node holds with 409 `moved`.
async fn files_served_by(node_url: &str, files: &[FileKeys]) -> Vec<usize> {
    let ep = Endpoint::from_url(node_url);
    let mut held = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let path = format!("/api/files/{}/doc", f.id);
        let got = http::get_with_key(&ep, &path, &f.view_key, Duration::from_secs(2)).await;
        if got.is_ok_and(|a| a.status == 200) {
            held.push(i);
        }
    }
    held
}

/// What the probe saw through each router alone, when there are several.
pub fn by_router(probed: &Probed, names: &[String], cleared_ms: f64) -> Vec<RouterServed> {
    if names.len() < 2 {
        return Vec::new();
    }
    names
        .iter()
        .enumerate()
        .map(|(r, name)| {
            let a = availability(&through(probed, r, None), cleared_ms);
            RouterServed {
                router: name.clone(),
                recover_ms: a.recover_ms,
                longest_outage_ms: a.longest_outage_ms,
                files_interrupted: a.files_interrupted,
            }
        })
        .collect()
}

/// `stale-router`: from the kill (`killed_ms` into probing) until the cut router, and the
/// slowest of the others, served every one of the dead node's files for good.
pub fn stale_figures(
    probed: &Probed,
    names: &[String],
    i: &Injection,
    killed_ms: f64,
) -> Option<StaleRouter> {
    let stale = i.stale_router?;
    let since_kill = |r: usize| {
        availability(&through(probed, r, Some(&i.dead_files)), killed_ms)
            .recover_ms
            .map(|t| round3((t - killed_ms).max(0.0)))
    };
    let healthy = (0..names.len())
        .filter(|&r| r != stale)
        .map(since_kill)
        .try_fold(0.0f64, |slowest, r| r.map(|r| slowest.max(r)));
    Some(StaleRouter {
        stale_router: names.get(stale).cloned().unwrap_or_default(),
        dead_node_files: i.dead_files.len() as u64,
        stale_router_ms: since_kill(stale),
        healthy_router_ms: healthy,
    })
}
