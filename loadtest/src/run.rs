//! One run: target, setup, ramp, warm-up, the measured window, the end (close or drop), and
//! the report. A sampler looks at the server and the counters every second throughout.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::client::{mark, Client, ClientEnd, End};
use crate::cluster::Cluster;
use crate::fault;
use crate::http::{self, Endpoint};
use crate::measure::{self, round3, Measures, Summary};
use crate::node::{self, Sample, Spawned};
use crate::options::{FaultKind, Options, Target};
use crate::profile::{self, ProfileReport};
use crate::report::{
    self, ClusterInfo, DropResult, Expected, Failover, MemoryPoint, Problems, Rates, Report, Second,
};
use crate::schedule::connect_at;
use crate::setup::{self, ClientPlan, FileKeys};

/// What the schedules ask for, a second: patches sent, presence sent, patches relayed.
pub fn expected(plans: &[ClientPlan], o: &Options) -> Expected {
    let mut people: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for p in plans {
        let e = people.entry(p.file).or_default();
        e.0 += 1.0;
        e.1 += f64::from(u8::from(p.editor));
    }
    let editors: f64 = people.values().map(|(_, e)| e).sum();
    let relays: f64 = people.values().map(|(n, e)| e * (n - 1.0)).sum();
    Expected {
        patches_sent_per_s: editors * o.edit_rate,
        presence_sent_per_s: plans.len() as f64 * o.presence_rate,
        patches_received_per_s: relays * o.edit_rate,
    }
}

/// What the sampler collects.
#[derive(Default)]
struct Collected {
    phase: &'static str,
    seconds: Vec<Second>,
    memory: Vec<MemoryPoint>,
    window_sched_p99: Option<f64>,
    max_rss: Option<u64>,
}

fn set_phase(c: &Mutex<Collected>, phase: &'static str) {
    c.lock().unwrap_or_else(|e| e.into_inner()).phase = phase;
}

/// Looks at the server and the counters every second until `stop`.
async fn sampler(
    m: Arc<Measures>,
    endpoint: Endpoint,
    pid: Option<u32>,
    collected: Arc<Mutex<Collected>>,
    stop: Arc<AtomicBool>,
    o: Options,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tick.tick().await;
    let mut last = (Instant::now(), m.snapshot(), None::<f64>);
    let mut own_last = measure::own_cpu_seconds();
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let s = look(&endpoint, pid, is_cluster(&o)).await;
        let (now, snap) = (Instant::now(), m.snapshot());
        let secs = now.duration_since(last.0).as_secs_f64();
        let r = last.1.rates(&snap, secs);
        let cpu = match (last.2, s.cpu_seconds) {
            (Some(a), Some(b)) if secs > 0.0 => Some(round3((b - a) / secs * 100.0)),
            _ => None,
        };
        let own = measure::own_cpu_seconds();
        let own_cpu = match (own_last, own) {
            (Some(a), Some(b)) if secs > 0.0 => Some(round3((b - a) / secs * 100.0)),
            _ => None,
        };
        own_last = own;
        let (relay, ack, presence) = (
            Measures::take_second(&m.relay),
            Measures::take_second(&m.ack),
            Measures::take_second(&m.presence),
        );
        let mut c = collected.lock().unwrap_or_else(|e| e.into_inner());
        let t_s = round3(m.elapsed().as_secs_f64());
        let row = Second {
            t_s,
            phase: c.phase.to_string(),
            open: m.counters.open.load(Ordering::Relaxed),
            patches_sent: r[0],
            patches_received: r[2],
            presence_sent: r[3],
            presence_received: r[4],
            mb_received: round3(r[7] / 1e6),
            relay_p50_ms: relay.p50,
            relay_p99_ms: relay.p99,
            ack_p50_ms: ack.p50,
            ack_p99_ms: ack.p99,
            presence_p50_ms: presence.p50,
            presence_p99_ms: presence.p99,
            generator_delay_p99_ms: Measures::take_second(&m.generator_delay).p99,
            server_cpu_percent: cpu,
            generator_cpu_percent: own_cpu,
            server_rss_mb: s.rss_bytes.map(report::mb),
            server_up: s.up,
        };
        if c.phase == "measure" {
            if let Some(st) = &s.stats {
                let worst = c.window_sched_p99.unwrap_or(0.0);
                c.window_sched_p99 = Some(worst.max(st.scheduling_delay_p99_ms));
            }
        }
        c.max_rss = c.max_rss.max(s.rss_bytes).max(s.peak_rss_bytes);
        c.memory.push(MemoryPoint {
            t_s,
            rss_mb: s.rss_bytes.map(report::mb),
            connections: s.stats.as_ref().map(|st| st.connections),
        });
        if o.verbose {
            eprintln!(
                "{t_s:>6.0}s {:<8} open {:>6} | patches {:>6.0}/s out {:>7.0}/s in | presence \
                 {:>7.0}/s out {:>7.0}/s in | p99 relay {:>7.1} ack {:>7.1} presence {:>7.1} ms | \
                 server CPU {:>5} rss {:>7} | gen delay p99 {:.1} ms",
                row.phase,
                row.open,
                row.patches_sent,
                row.patches_received,
                row.presence_sent,
                row.presence_received,
                row.relay_p99_ms,
                row.ack_p99_ms,
                row.presence_p99_ms,
                cpu.map_or("n/a".into(), |c| format!("{c:.0}%")),
                row.server_rss_mb
                    .map_or("n/a".into(), |r| format!("{r:.0}MB")),
                row.generator_delay_p99_ms,
            );
        }
        c.seconds.push(row);
        drop(c);
        last = (now, snap, s.cpu_seconds.or(last.2));
    }
}

fn is_cluster(o: &Options) -> bool {
    matches!(o.target, Target::Cluster { .. })
}

/// Samples the server. In cluster mode the process measured is the router (`pid`), and the
/// statistics of whichever node answered `/health` through it are left out.
async fn look(endpoint: &Endpoint, pid: Option<u32>, cluster: bool) -> Sample {
    let mut s = node::sample(endpoint, pid).await;
    if cluster {
        s.stats = None;
    }
    s
}

fn progress(o: &Options, text: &str) {
    if !o.verbose {
        eprint!("\r{text:<70}");
        let _ = std::io::stderr().flush();
    }
}

/// Runs the whole test and returns its report.
pub async fn run(o: Options) -> Result<Report> {
    let mut spawned = None;
    let mut cluster: Option<Cluster> = None;
    let (url, target) = match &o.target {
        Target::Cluster {
            nodes,
            server,
            router,
        } => {
            progress(&o, &format!("starting {nodes} nodes and a router"));
            let c = Cluster::start(&o, *nodes, server.as_deref(), router.as_deref()).await?;
            let url = c.router_url.clone();
            cluster = Some(c);
            (
                url.clone(),
                format!("spawned cluster of {nodes} nodes behind the router at {url}"),
            )
        }
        Target::Spawn { server, port } => {
            let binary = node::find_binary(server.as_deref());
            let env = node::spawn_env(&o);
            let port = *port;
            let s =
                tokio::task::spawn_blocking(move || Spawned::start(&binary, port, &env)).await??;
            let url = s.url.clone();
            spawned = Some(s);
            (url.clone(), format!("spawned node at {url}"))
        }
        Target::Url(url) => {
            let authority = url.trim_start_matches("http://");
            if !o.i_have_permission && !node::is_loopback(authority).await? {
                bail!(
                    "{url} is not on this machine: thousands of connections look like an attack. \
                     Ask its owner first, then add --i-have-permission"
                );
            }
            (url.clone(), url.clone())
        }
    };
    let endpoint = Endpoint::from_url(&url);
    let pid = spawned
        .as_ref()
        .map(Spawned::pid)
        .or_else(|| cluster.as_ref().and_then(Cluster::router_pid));
    node::health(&endpoint, Duration::from_secs(5))
        .await
        .with_context(|| format!("the server at {url} cannot be reached"))?;

    let result = drive(&o, &endpoint, pid, &mut spawned, &mut cluster, target).await;
    if let Some(c) = cluster.take() {
        for note in c.stop().await {
            eprintln!("atrium-loadtest: cluster stop: {note}");
        }
    }
    if let Some(s) = spawned.take() {
        let status = tokio::task::spawn_blocking(move || s.stop()).await?;
        if o.verbose {
            eprintln!("spawned node stopped: {status}");
        }
    }
    let mut report = result?;
    // The flame graph is drawn after the node stopped, so its work does not load the node.
    if let Some(p) = report.profile.take() {
        report.profile = Some(if p.error.is_some() {
            p
        } else {
            let title = format!("atrium-node CPU: {}", report_title(&report));
            tokio::task::spawn_blocking(move || profile::render(&profile::perf_binary(), p, &title))
                .await?
        });
    }
    Ok(report)
}

fn report_title(r: &Report) -> String {
    if r.label.is_empty() {
        format!("{} users, {} files", r.users, r.files)
    } else {
        r.label.clone()
    }
}

/// Opens every client's socket on the ramp (all at once in a storm); returns their tasks.
async fn connect_all(
    o: &Options,
    endpoint: &Endpoint,
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
            ws_url: endpoint.ws_url(&file.id),
            key: if plan.editor {
                &file.edit_key
            } else {
                &file.view_key
            }
            .clone(),
            token: plan.account.map(|a| made.tokens[a].clone()),
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
async fn wait_until_joined(o: &Options, m: &Measures) {
    let settled = tokio::time::Instant::now() + Duration::from_secs(15);
    let resolved = || {
        m.counters.connected.load(Ordering::Relaxed)
            + m.counters.connection_errors.load(Ordering::Relaxed)
    };
    while resolved() < o.users as u64 && tokio::time::Instant::now() < settled {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Injects the run's fault into the fleet, with a probe watching every file from then on.
async fn strike(
    o: &Options,
    f: crate::options::Fault,
    c: &mut Cluster,
    endpoint: &Endpoint,
    files: &[FileKeys],
    window_start: tokio::time::Instant,
) -> Result<Struck> {
    let struck_at_s = round3(window_start.elapsed().as_secs_f64());
    progress(o, &format!("injecting the fault: {}", f.kind.name()));
    let probe_stop = Arc::new(AtomicBool::new(false));
    let struck = Instant::now();
    let probe = tokio::spawn(fault::probe(
        endpoint.clone(),
        files.to_vec(),
        struck,
        probe_stop.clone(),
    ));
    let injection = fault::inject(c, f, crate::cluster::lease_ms(o)).await;
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

/// Ends the clients: a clean close (after a quiet second for resends), or everyone dropping
/// at once with `--drop`; returns the drop's result and what each client saw.
async fn end_clients(
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

async fn drive(
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
    let handles = connect_all(o, endpoint, &made, &plans, &m, &end_rx, in_cluster).await;
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

    // The measured window.
    set_phase(&collected, "measure");
    let recorder = match (&o.profile, pid) {
        (Some(dir), Some(pid)) => Some(
            profile::Recorder::start(&profile::perf_binary(), pid, dir, &o.profile_call_graph)
                .context("--profile")?,
        ),
        _ => None,
    };
    let s0 = look(endpoint, pid, in_cluster).await;
    let (c0, g0, t0) = (m.snapshot(), measure::own_cpu_seconds(), Instant::now());
    let busy0 = measure::machine_cpu_seconds();
    m.set_measuring(true);
    let window_start = tokio::time::Instant::now();
    let window_end = window_start + Duration::from_secs_f64(o.duration);
    let mut fault_at = o
        .fault
        .map(|f| window_start + Duration::from_secs_f64(f.at));
    let mut fault: Option<Struck> = None;
    while tokio::time::Instant::now() < window_end {
        if let (Some(at), Some(c), Some(f)) = (fault_at, cluster.as_mut(), o.fault) {
            if tokio::time::Instant::now() >= at {
                fault_at = None;
                fault = Some(strike(o, f, c, endpoint, &made.files, window_start).await?);
            }
        }
        let left = window_end - tokio::time::Instant::now();
        let left = match fault_at {
            Some(at) => left.min(at.saturating_duration_since(tokio::time::Instant::now())),
            None => left,
        };
        progress(
            o,
            &format!(
                "measuring: {:.0} s left, {} open",
                left.as_secs_f64(),
                m.counters.open.load(Ordering::Relaxed)
            ),
        );
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
    }
    m.set_measuring(false);
    if let Some(struck) = &fault {
        struck.probe_stop.store(true, Ordering::Relaxed);
    }
    let (c1, g1, window) = (m.snapshot(), measure::own_cpu_seconds(), t0.elapsed());
    let busy1 = measure::machine_cpu_seconds();
    let s1 = look(endpoint, pid, in_cluster).await;
    let recorded = match recorder {
        Some(rec) => Some(tokio::task::spawn_blocking(move || rec.stop()).await?),
        None => None,
    };
    let open_at_end = m.counters.open.load(Ordering::Relaxed);

    // The end: a clean close, or everyone dropping at once.
    let (drop_result, ends) =
        end_clients(o, &end_tx, endpoint, spawned, &collected, handles, &m).await;
    let rooms_at_end = match cluster.as_ref() {
        Some(c) => fault::rooms_by_node(c).await,
        None => BTreeMap::new(),
    };
    let failover = match fault {
        Some(struck) => {
            progress(o, "checking the final documents");
            let mut f = struck.report(&m).await;
            converge(&mut f, endpoint, &made.files, &ends).await;
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
    let window_s = window.as_secs_f64();
    let mut r = Report {
        label: o.label.clone(),
        date_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        target,
        users: o.users,
        files: o.files,
        pages: o.pages,
        editors: plans.iter().filter(|p| p.editor).count(),
        edit_rate: o.edit_rate,
        presence_rate: o.presence_rate,
        warmup_s: o.warmup,
        duration_s: round3(window_s),
        connected,
        connect_s: round3(connect_s),
        storm: o.storm,
        patch_relay_ms: Measures::total(&m.relay),
        patch_ack_ms: Measures::total(&m.ack),
        presence_ms: Measures::total(&m.presence),
        expected: expected(&plans, o),
        problems: problems(&m),
        memory: collected.memory,
        seconds: collected.seconds,
        drop: drop_result,
        failover,
        cluster: cluster.as_ref().map(|c| ClusterInfo {
            nodes: c
                .nodes
                .iter()
                .map(|n| (n.id.clone(), n.url.clone()))
                .collect(),
            router: c.router_url.clone(),
            router_pid: c.router_pid(),
            services: c.services.clone(),
            coordinator: c.coordinator.clone(),
            rooms_at_end,
        }),
        ..Default::default()
    };
    if let (Some(dir), Some(recorded)) = (&o.profile, recorded) {
        r.profile = Some(match recorded {
            Ok(secs) => ProfileReport {
                dir: dir.clone(),
                recorded_s: secs,
                frequency_hz: profile::FREQUENCY_HZ,
                call_graph: o.profile_call_graph.clone(),
                ..Default::default()
            },
            Err(e) => ProfileReport {
                dir: dir.clone(),
                frequency_hz: profile::FREQUENCY_HZ,
                call_graph: o.profile_call_graph.clone(),
                error: Some(format!("{e:#}")),
                ..Default::default()
            },
        });
    }
    let rates = c0.rates(&c1, window_s);
    r.rates = Rates {
        patches_sent_per_s: round3(rates[0]),
        acks_received_per_s: round3(rates[1]),
        patches_received_per_s: round3(rates[2]),
        presence_sent_per_s: round3(rates[3]),
        presence_received_per_s: round3(rates[4]),
        messages_sent_per_s: round3(rates[5]),
        messages_received_per_s: round3(rates[6]),
        mb_received_per_s: round3(rates[7] / 1e6),
    };
    let own_messages = (c1.messages_sent + c1.messages_received)
        .saturating_sub(c0.messages_sent + c0.messages_received);
    server_measures(
        &mut r,
        &before,
        &s0,
        &s1,
        window_s,
        own_messages,
        open_at_end,
    );
    r.server.pid = pid;
    r.server.sched_delay_p99_ms = collected.window_sched_p99;
    r.server.max_rss_mb = collected.max_rss.max(s1.peak_rss_bytes).map(report::mb);
    let delay: Summary = Measures::total(&m.generator_delay);
    r.generator.workers = o.workers;
    r.generator.sched_delay_ms = delay;
    r.generator.sched_delay_p99_ms = delay.p99;
    r.generator.sched_delay_max_ms = delay.max;
    if let (Some(a), Some(b)) = (g0, g1) {
        r.generator.cpu_cores = Some(round3((b - a) / window_s));
        r.generator.cpu_us_per_message = report::cpu_us_per_message(b - a, own_messages);
    }
    r.machine.cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    if let (Some(a), Some(b)) = (busy0, busy1) {
        let busy = (b - a) / window_s;
        r.machine.busy_cores = Some(round3(busy));
        if let (Some(srv), Some(generator)) = (r.server.cpu_cores, r.generator.cpu_cores) {
            r.machine.other_cores = Some(round3((busy - srv - generator).max(0.0)));
        }
    }
    let sent = c1.messages_sent - c0.messages_sent;
    r.generator.busy_reason = report::busy(delay.p99, c1.sends_skipped - c0.sends_skipped, sent);
    r.generator.busy_warning = r.generator.busy_reason.is_some();
    Ok(r)
}

fn problems(m: &Measures) -> Problems {
    let c = &m.counters;
    let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let map =
        |x: &Mutex<BTreeMap<String, u64>>| x.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Problems {
        dropped_patches: g(&c.dropped_patches),
        out_of_order: g(&c.out_of_order),
        unacked_patches: g(&c.unacked_patches),
        unexpected_closes: map(&m.unexpected_closes),
        connection_errors: g(&c.connection_errors),
        handshake_resets: g(&c.handshake_resets),
        rate_limited: g(&c.rate_limited),
        rejected: g(&c.rejected),
        rejects: map(&m.rejects),
        notices: map(&m.notices),
        joined_as_viewer: g(&c.joined_as_viewer),
        sends_skipped: g(&c.sends_skipped),
    }
}

/// Server CPU, messages and memory over the window, from two samples.
fn server_measures(
    r: &mut Report,
    before: &Sample,
    s0: &Sample,
    s1: &Sample,
    window_s: f64,
    own_messages: u64,
    open: u64,
) {
    let s = &mut r.server;
    let cpu = match (s0.cpu_seconds, s1.cpu_seconds) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    s.cpu_cores = cpu.map(|c| round3(c / window_s));
    s.cpu_percent = cpu.map(|c| round3(c / window_s * 100.0));
    let (messages, by) = match (&s0.stats, &s1.stats) {
        (Some(a), Some(b)) => {
            let inn = b.messages_in.saturating_sub(a.messages_in);
            let out = b.messages_out.saturating_sub(a.messages_out);
            s.messages_in_per_s = Some(round3(inn as f64 / window_s));
            s.messages_out_per_s = Some(round3(out as f64 / window_s));
            (inn + out, "health")
        }
        _ => (own_messages, "generator"),
    };
    s.messages_counted_by = by.to_string();
    s.cpu_us_per_message = cpu.and_then(|c| report::cpu_us_per_message(c, messages));
    s.rss_before_mb = before.rss_bytes.map(report::mb);
    s.rss_end_mb = s1.rss_bytes.map(report::mb);
    if let (Some(a), Some(b)) = (before.rss_bytes, s1.rss_bytes) {
        s.kb_per_connection = report::kb_per_connection(a, b, open);
    }
    s.connections = s1.stats.as_ref().map(|st| st.connections);
    s.rooms = s1.stats.as_ref().map(|st| st.rooms);
    s.people = s1.stats.as_ref().map(|st| st.people);
    s.editors = s1.stats.as_ref().map(|st| st.editors);
}

/// Each node's rooms (files it holds), from its own `/health` (`stats.rooms`).
/// A fault that struck in the window, and its availability probe (stopped when the window
/// ends).
struct Struck {
    kind: FaultKind,
    at_s: f64,
    /// When the fault struck (the kill, the stop, the first SIGTERM).
    started: Instant,
    /// Ms from the probe's origin until the fault was undone.
    cleared_ms: f64,
    injection: fault::Injection,
    probe: JoinHandle<Vec<Vec<(f64, bool)>>>,
    probe_stop: Arc<AtomicBool>,
}

impl Struck {
    /// Stops the probe and turns what it and the clients saw into the report's section.
    async fn report(self, m: &Measures) -> Failover {
        self.probe_stop.store(true, Ordering::Relaxed);
        let seen = self.probe.await.unwrap_or_default();
        let a = fault::availability(&seen, self.cleared_ms);
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
            recover_ms: a.recover_ms,
            longest_outage_ms: a.longest_outage_ms,
            files_interrupted: a.files_interrupted,
            clients_back_ms: (back > struck_us).then(|| round3((back - struck_us) as f64 / 1000.0)),
            reconnects: m.counters.reconnects.load(Ordering::Relaxed),
            reconnect_failures: m.counters.reconnect_failures.load(Ordering::Relaxed),
            join_retries: m.counters.join_retries.load(Ordering::Relaxed),
            resent_patches: m.counters.resent_patches.load(Ordering::Relaxed),
            ..Default::default()
        }
    }
}

/// The end of a failover run: every file's final document through the router; every acked
/// patch's mark must be in it, and every client's model must equal it.
async fn converge(f: &mut Failover, endpoint: &Endpoint, files: &[FileKeys], ends: &[ClientEnd]) {
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
    for e in ends {
        f.clients_disconnected_at_end += u64::from(!e.connected_at_end);
        let fin = finals.get(e.file).and_then(Option::as_ref);
        for id in &e.acked {
            f.acked_checked += 1;
            let there = fin
                .and_then(|d| d.get(&e.rect))
                .and_then(|r| r.get(mark(e.index, *id)))
                .is_some();
            if !there {
                f.acked_lost += 1;
            }
        }
        if let Some((_, doc)) = &e.doc {
            f.clients_checked += 1;
            if fin != Some(doc) {
                f.not_converged += 1;
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{merge, Cli, FileConfig};
    use clap::Parser;

    fn options(args: &[&str]) -> Options {
        let mut all = vec!["atrium-loadtest", "--spawn"];
        all.extend_from_slice(args);
        merge(Cli::try_parse_from(all).unwrap(), FileConfig::default()).unwrap()
    }

    #[test]
    fn expected_rates_follow_the_plan() {
        let o = options(&["--users", "1000", "--files", "100"]);
        let e = expected(&setup::plan(&o), &o);
        assert_eq!(e.patches_sent_per_s, 200.0); // 100 editors at 2/s
        assert_eq!(e.presence_sent_per_s, 20_000.0);
        assert_eq!(e.patches_received_per_s, 1800.0); // each to 9 others
    }

    #[test]
    fn spawned_nodes_get_room_for_one_address_and_user_settings_win() {
        let o = options(&["--per-account", "40", "--env", "ATRIUM_WS_PER_IP=7"]);
        let env: BTreeMap<_, _> = node::spawn_env(&o).into_iter().collect();
        assert_eq!(env["ATRIUM_HEALTH_STATS"], "1");
        assert_eq!(env["ATRIUM_WS_PER_IP"], "7");
        assert_eq!(env["ATRIUM_WS_PER_ACCOUNT"], "40");
        assert_eq!(env["ATRIUM_AUTH_PER_IP_PER_MINUTE"], "1000000");
    }
}
