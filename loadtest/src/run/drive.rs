//! The run's course: setup, ramp, warm-up, the measured window, the end, the failover check.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Result};
use tokio::sync::watch;

use super::assemble::Ran;
use super::clients::{connect_all, end_clients, wait_until_joined};
use super::failover::converge;
use super::sampler::{sampler, set_phase, Collected};
use super::window::{self, Target};
use super::{look, progress};
use crate::client::End;
use crate::cluster::Cluster;
use crate::fault;
use crate::http::Endpoint;
use crate::measure::{self, Measures};
use crate::node::Spawned;
use crate::options::Options;
use crate::report::{ClusterInfo, Report};
use crate::setup;

pub async fn drive(
    o: &Options,
    endpoint: &Endpoint,
    pid: Option<u32>,
    spawned: &mut Option<Spawned>,
    cluster: &mut Option<Cluster>,
    target: String,
) -> Result<Report> {
    let in_cluster = cluster.is_some();
    progress(o, "setting up accounts and files");
    let made = setup::run(endpoint, o).await?;
    if let Some(c) = cluster.as_ref() {
        c.standby_caught_up(Duration::from_secs(30)).await?;
    }
    let plans = setup::plan(o);
    let m = Measures::new();
    let stop = Arc::new(AtomicBool::new(false));
    let collected = Arc::new(Mutex::new(Collected {
        phase: "connect",
        ..Default::default()
    }));
    let before = look(endpoint, pid, in_cluster).await;
    let probe = tokio::spawn(measure::probe(m.clone(), stop.clone()));
    let sampler = tokio::spawn(sampler(
        m.clone(),
        endpoint.clone(),
        pid,
        collected.clone(),
        stop.clone(),
        o.clone(),
    ));

    // Ramp: connection i opens at i / ramp seconds (all at once in a storm).
    let (end_tx, end_rx) = watch::channel(End::Running);
    let start = tokio::time::Instant::now();
    // Clients are spread over every router, as a load balancer in front of them would.
    let routers = match cluster.as_ref() {
        Some(c) => c.router_endpoints(),
        None => vec![endpoint.clone()],
    };
    let handles = connect_all(o, &routers, &made, &plans, &m, &end_rx, in_cluster).await;
    wait_until_joined(o, &m).await;
    let connect_s = start.elapsed().as_secs_f64();
    let connected = m.counters.connected.load(Ordering::Relaxed);
    if connected == 0 {
        stop.store(true, Ordering::Relaxed);
        let _ = end_tx.send(End::Close);
        bail!("no client could join; is the node refusing sockets? (check its limits)");
    }

    set_phase(&collected, "warmup");
    progress(
        o,
        &format!("{connected} connected; warming up {} s", o.warmup),
    );
    tokio::time::sleep(Duration::from_secs_f64(o.warmup)).await;

    set_phase(&collected, "measure");
    let mut t = Target {
        endpoint,
        pid,
        cluster,
    };
    let restoring = (o.restore_every > 0.0).then(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let files = made
            .files
            .iter()
            .map(|f| crate::setup::FileKeys {
                id: f.id.clone(),
                view_key: f.view_key.clone(),
                edit_key: f.edit_key.clone(),
            })
            .collect();
        let task = tokio::spawn(crate::restores::run(
            endpoint.clone(),
            files,
            o.restore_every,
            stop.clone(),
        ));
        (stop, task)
    });
    let patching = if o.server_patches_per_s > 0.0 {
        let key = crate::server_patches::api_key(endpoint, o.api_key.as_deref()).await?;
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(crate::server_patches::run(
            endpoint.clone(),
            key,
            made.files.clone(),
            o.server_patches_per_s,
            stop.clone(),
        ));
        Some((stop, task))
    } else {
        None
    };
    let mut window = window::measure(o, &mut t, &m, &made.files).await?;
    let server_patches = match patching {
        Some((stop, task)) => {
            stop.store(true, Ordering::Relaxed);
            task.await.ok()
        }
        None => None,
    };
    let restores = match restoring {
        Some((stop, task)) => {
            stop.store(true, Ordering::Relaxed);
            task.await.ok()
        }
        None => None,
    };

    // The end: a clean close, or everyone dropping at once.
    let (drop_result, ends) =
        end_clients(o, &end_tx, endpoint, spawned, &collected, handles, &m).await;
    let rooms_at_end = match cluster.as_ref() {
        Some(c) => fault::rooms_by_node(c).await,
        None => BTreeMap::new(),
    };
    let failover = match window.fault.take() {
        Some(struck) => {
            progress(o, "checking the final documents");
            let started = struck.started();
            let mut f = struck.report(&m).await;
            converge(&mut f, started, endpoint, &made.files, &ends).await;
            f.clients_unfinished = (o.users - ends.len()) as u64;
            Some(f)
        }
        None => None,
    };
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    let _ = probe.await;
    progress(o, "");
    if !o.verbose {
        eprintln!();
    }

    let collected = Arc::try_unwrap(collected)
        .map(|c| c.into_inner().unwrap_or_else(|e| e.into_inner()))
        .unwrap_or_default();
    let ran = Ran {
        target,
        plans,
        connected,
        connect_s,
        before,
        drop: drop_result,
        failover,
        cluster: cluster.as_ref().map(|c| ClusterInfo {
            nodes: c
                .nodes
                .iter()
                .map(|n| (n.id.clone(), n.url.clone()))
                .collect(),
            router: c.router_url(),
            routers: match c.routers.len() {
                1 => Vec::new(),
                _ => c.routers.iter().map(|r| r.url.clone()).collect(),
            },
            router_pid: c.router_pid(),
            services: c.services.clone(),
            coordinator: c.coordinator.clone(),
            rooms_at_end,
        }),
        pid,
    };
    let mut report = ran.report(o, &m, &window, collected);
    report.restores = restores;
    report.server_patches = server_patches;
    Ok(report)
}
