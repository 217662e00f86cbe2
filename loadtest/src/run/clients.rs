//! The clients' lives as the run sees them: connecting on the ramp, and the end (a clean
//! close, or everyone dropping at once).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::sampler::{set_phase, Collected};
use super::{is_cluster, progress};
use crate::client::{Client, ClientEnd, End};
use crate::http::Endpoint;
use crate::measure::{round3, Measures};
use crate::node::{self, Spawned};
use crate::options::Options;
use crate::report::DropResult;
use crate::schedule::connect_at;
use crate::setup::{self, ClientPlan};

/// Opens every client's socket on the ramp (all at once in a storm), spread over the
/// routers in turn; returns their tasks.
pub async fn connect_all(
    o: &Options,
    routers: &[Endpoint],
    made: &setup::Setup,
    plans: &[ClientPlan],
    m: &Arc<Measures>,
    end_rx: &watch::Receiver<End>,
    in_cluster: bool,
) -> Vec<JoinHandle<ClientEnd>> {
    let start = tokio::time::Instant::now();
    let mut handles: Vec<JoinHandle<ClientEnd>> = Vec::with_capacity(plans.len());
    for plan in plans {
        tokio::time::sleep_until(start + connect_at(plan.index, o.ramp)).await;
        let file = &made.files[plan.file];
        let client = Client {
            ws_urls: routers.iter().map(|r| r.ws_url(&file.id)).collect(),
            // Round robin over the routers.
            via: plan.index % routers.len(),
            key: if plan.editor {
                &file.edit_key
            } else {
                &file.view_key
            }
            .clone(),
            token: plan.account.map(|a| match &made.app_tokens {
                Some(app) => app.person(a, &file.id, plan.editor),
                None => made.tokens[a].clone(),
            }),
            edit_rate: o.edit_rate,
            presence_rate: o.presence_rate,
            measures: m.clone(),
            end: end_rx.clone(),
            track: in_cluster,
            comes_back: in_cluster || o.storm,
            plan: plan.clone(),
        };
        handles.push(tokio::spawn(client.run()));
        if plan.index % 100 == 0 {
            progress(o, &format!("connecting {}/{}", plan.index, o.users));
        }
    }
    handles
}

/// Waits (up to 15 s) until every client has joined or given up.
pub async fn wait_until_joined(o: &Options, m: &Measures) {
    let settled = tokio::time::Instant::now() + Duration::from_secs(15);
    let resolved = || {
        m.counters.connected.load(Ordering::Relaxed)
            + m.counters.connection_errors.load(Ordering::Relaxed)
    };
    while resolved() < o.users as u64 && tokio::time::Instant::now() < settled {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Ends the clients: a clean close (after a quiet second for resends), or everyone dropping
/// at once with `--drop`; returns the drop's result and what each client saw.
pub async fn end_clients(
    o: &Options,
    end_tx: &watch::Sender<End>,
    endpoint: &Endpoint,
    spawned: &mut Option<Spawned>,
    collected: &Mutex<Collected>,
    handles: Vec<JoinHandle<ClientEnd>>,
    m: &Measures,
) -> (Option<DropResult>, Vec<ClientEnd>) {
    let in_cluster = is_cluster(o);
    let drop_result = if o.drop {
        set_phase(collected, "drop");
        progress(o, "dropping every socket at once");
        Some(drop_all(end_tx, endpoint, spawned).await)
    } else {
        set_phase(collected, "close");
        progress(o, "closing");
        let _ = end_tx.send(End::Quiet);
        // Tracking clients may still be resending after a reconnect: give them longer,
        // and those still waiting to come back (a node's retry-ms hint is up to 3 s)
        // up to 4 s more, until every socket is open again.
        let quiet = if in_cluster { 2 } else { 1 };
        tokio::time::sleep(Duration::from_secs(quiet)).await;
        if in_cluster {
            let back_by = tokio::time::Instant::now() + Duration::from_secs(4);
            while m.counters.open.load(Ordering::Relaxed) < o.users as u64
                && tokio::time::Instant::now() < back_by
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let _ = end_tx.send(End::Close);
        None
    };
    let mut ends: Vec<ClientEnd> = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        for h in handles {
            if let Ok(e) = h.await {
                ends.push(e);
            }
        }
    })
    .await;
    (drop_result, ends)
}

/// Every client drops at once; then: did the server stay up, and how soon did /health answer
/// (and its connections fall to zero)?
async fn drop_all(
    end_tx: &watch::Sender<End>,
    endpoint: &Endpoint,
    spawned: &mut Option<Spawned>,
) -> DropResult {
    let t0 = Instant::now();
    let _ = end_tx.send(End::Drop);
    let mut result = DropResult::default();
    let deadline = t0 + Duration::from_secs(60);
    while Instant::now() < deadline {
        if node::health(endpoint, Duration::from_millis(500))
            .await
            .is_ok()
        {
            result.health_after_ms = Some(round3(t0.elapsed().as_secs_f64() * 1000.0));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let deadline = t0 + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(st)) = node::health(endpoint, Duration::from_millis(500)).await {
            if st.connections == 0 {
                result.connections_zero_after_ms =
                    Some(round3(t0.elapsed().as_secs_f64() * 1000.0));
                break;
            }
        } else {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let alive = spawned.as_mut().is_none_or(Spawned::alive);
    result.server_up = alive && result.health_after_ms.is_some();
    result
}
