//! A fault in the measured window: striking it, probing the files meanwhile, and checking
//! after the end that no acked patch was lost and every client converged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::task::JoinHandle;

use super::progress;
use crate::client::{mark, ClientEnd};
use crate::cluster::Cluster;
use crate::fault;
use crate::http::{self, Endpoint};
use crate::measure::{round3, Measures};
use crate::options::{Fault, FaultKind, Options};
use crate::report::Failover;
use crate::setup::FileKeys;

/// Injects the run's fault into the fleet, with a probe watching every file from then on.
pub async fn strike(
    o: &Options,
    f: Fault,
    c: &mut Cluster,
    files: &[FileKeys],
    window_start: tokio::time::Instant,
) -> Result<Struck> {
    let struck_at_s = round3(window_start.elapsed().as_secs_f64());
    progress(o, &format!("injecting the fault: {}", f.kind.name()));
    let probe_stop = Arc::new(AtomicBool::new(false));
    let struck = Instant::now();
    let probe = tokio::spawn(fault::probe(
        c.router_endpoints(),
        files.to_vec(),
        struck,
        probe_stop.clone(),
    ));
    let routers = c.routers.iter().map(|r| r.name.clone()).collect();
    let injection = fault::inject(c, f, crate::cluster::lease_ms(o), files).await;
    let (injection, started) = match injection {
        Ok(done) => done,
        Err(e) => {
            probe_stop.store(true, Ordering::Relaxed);
            return Err(e.context(format!("--fault {}", f.kind.name())));
        }
    };
    if o.verbose {
        for step in &injection.steps {
            eprintln!("fault: {step}");
        }
    }
    Ok(Struck {
        kind: f.kind,
        at_s: struck_at_s,
        started,
        started_ms: started.duration_since(struck).as_secs_f64() * 1000.0,
        routers,
        cleared_ms: if f.kind.served_meanwhile() {
            0.0
        } else {
            started.duration_since(struck).as_secs_f64() * 1000.0 + injection.lasted_ms
        },
        injection,
        probe,
        probe_stop,
    })
}

/// A fault that struck in the window, and its availability probe (stopped when the window
/// ends).
pub struct Struck {
    kind: FaultKind,
    at_s: f64,
    /// When the fault struck (the kill, the stop, the first SIGTERM).
    started: Instant,
    /// The same, in ms from the probe's origin.
    started_ms: f64,
    /// The routers' names, in the probe's order.
    routers: Vec<String>,
    /// Ms from the probe's origin until the fault was undone.
    cleared_ms: f64,
    injection: fault::Injection,
    probe: JoinHandle<fault::Probed>,
    probe_stop: Arc<AtomicBool>,
}

impl Struck {
    /// Stops the availability probe (the window ended).
    pub fn stop_probe(&self) {
        self.probe_stop.store(true, Ordering::Relaxed);
    }

    /// When the fault struck.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Stops the probe and turns what it and the clients saw into the report's section.
    pub async fn report(self, m: &Measures) -> Failover {
        self.probe_stop.store(true, Ordering::Relaxed);
        let probed = self.probe.await.unwrap_or_default();
        let a = fault::availability(&fault::through_all(&probed), self.cleared_ms);
        let routers = fault::by_router(&probed, &self.routers, self.cleared_ms);
        let stale = fault::stale_figures(&probed, &self.routers, &self.injection, self.started_ms);
        let back = m.counters.last_rejoin_us.load(Ordering::Relaxed);
        let struck_us = self.started.duration_since(m.origin()).as_micros() as u64;
        let i = self.injection;
        Failover {
            fault: self.kind.name().to_string(),
            killed_at_s: self.at_s,
            killed_node: i.target.clone(),
            killed_node_rooms: i.target_rooms,
            target: i.target,
            rooms_by_node: i.rooms_by_node,
            fault_lasted_ms: i.lasted_ms,
            steps: i.steps,
            woken_room_exits: i.woken_room_exits,
            standby_lag_ms: i.standby_lag_ms,
            recover_ms: a.recover_ms,
            longest_outage_ms: a.longest_outage_ms,
            files_interrupted: a.files_interrupted,
            clients_back_ms: (back > struck_us).then(|| round3((back - struck_us) as f64 / 1000.0)),
            reconnects: m.counters.reconnects.load(Ordering::Relaxed),
            reconnect_failures: m.counters.reconnect_failures.load(Ordering::Relaxed),
            join_retries: m.counters.join_retries.load(Ordering::Relaxed),
            resent_patches: m.counters.resent_patches.load(Ordering::Relaxed),
            router_switches: m.counters.router_switches.load(Ordering::Relaxed),
            routers,
            stale,
            ..Default::default()
        }
    }
}

/// The end of a failover run: every file's final document through the router; every acked
/// patch's mark must be in it, and every client's model must equal it.
pub async fn converge(
    f: &mut Failover,
    struck: Instant,
    endpoint: &Endpoint,
    files: &[FileKeys],
    ends: &[ClientEnd],
) {
    let mut finals: Vec<Option<serde_json::Map<String, serde_json::Value>>> = Vec::new();
    for file in files {
        let path = format!("/api/files/{}/doc", file.id);
        let mut doc = None;
        for _ in 0..20 {
            match http::get_with_key(endpoint, &path, &file.view_key, Duration::from_secs(5)).await
            {
                Ok(a) if a.status == 200 => {
                    doc = a.body["doc"].as_object().cloned();
                    break;
                }
                _ => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
        if doc.is_none() {
            f.files_unreadable += 1;
        }
        finals.push(doc);
    }
    f.history = crate::history::check(ends.iter().map(|e| crate::history::ClientLog {
        client: e.index,
        file: e.file,
        seen: &e.seen,
    }));
    for e in ends {
        f.clients_disconnected_at_end += u64::from(!e.connected_at_end);
        let fin = finals.get(e.file).and_then(Option::as_ref);
        for (id, at) in &e.acked {
            f.acked_checked += 1;
            let there = fin
                .and_then(|d| d.get(&e.rect))
                .and_then(|r| r.get(mark(e.index, *id)))
                .is_some();
            if !there {
                f.acked_lost += 1;
                let before_ms = if *at <= struck {
                    struck.duration_since(*at).as_secs_f64() * 1000.0
                } else {
                    -(at.duration_since(struck).as_secs_f64() * 1000.0)
                };
                let earliest = f.lost_acked_before_fault_ms.get_or_insert(before_ms);
                *earliest = earliest.max(before_ms);
            }
        }
        if let Some((_, doc)) = &e.doc {
            f.clients_checked += 1;
            if fin != Some(doc) {
                f.not_converged += 1;
            }
        }
    }
    if let Some(ms) = &mut f.lost_acked_before_fault_ms {
        *ms = round3(*ms);
    }
}
