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

use crate::client::{Client, End};
use crate::http::Endpoint;
use crate::measure::{self, round3, Measures, Summary};
use crate::options::{Options, Target};
use crate::profile::{self, ProfileReport};
use crate::report::{self, DropResult, Expected, MemoryPoint, Problems, Rates, Report, Second};
use crate::schedule::connect_at;
use crate::server::{self, Sample, Spawned};
use crate::setup::{self, ClientPlan};

/// The settings a spawned node gets unless `--env` or the config file says otherwise: statistics
/// on, and the per-address, per-account and sign-up limits raised, since every generated socket
/// and sign-up comes from one address.
pub fn spawn_env(o: &Options) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    set("ATRIUM_HEALTH_STATS", "1".into());
    set("ATRIUM_WS_PER_IP", "1000000".into());
    set("ATRIUM_WS_PER_ACCOUNT", o.per_account.max(10).to_string());
    set("ATRIUM_AUTH_PER_IP_PER_MINUTE", "1000000".into());
    set("ATRIUM_AUTH_PER_EMAIL_PER_MINUTE", "1000000".into());
    for (k, v) in &o.env {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}

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
        let s = server::sample(&endpoint, pid).await;
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

fn progress(o: &Options, text: &str) {
    if !o.verbose {
        eprint!("\r{text:<70}");
        let _ = std::io::stderr().flush();
    }
}

/// Runs the whole test and returns its report.
pub async fn run(o: Options) -> Result<Report> {
    let mut spawned = None;
    let (url, target) = match &o.target {
        Target::Spawn { server, port } => {
            let binary = server::find_binary(server.as_deref());
            let env = spawn_env(&o);
            let port = *port;
            let s =
                tokio::task::spawn_blocking(move || Spawned::start(&binary, port, &env)).await??;
            let url = s.url.clone();
            spawned = Some(s);
            (url.clone(), format!("spawned node at {url}"))
        }
        Target::Url(url) => {
            let authority = url.trim_start_matches("http://");
            if !o.i_have_permission && !server::is_loopback(authority).await? {
                bail!(
                    "{url} is not on this machine: thousands of connections look like an attack. \
                     Ask its owner first, then add --i-have-permission"
                );
            }
            (url.clone(), url.clone())
        }
    };
    let endpoint = Endpoint::from_url(&url);
    let pid = spawned.as_ref().map(Spawned::pid);
    server::health(&endpoint, Duration::from_secs(5))
        .await
        .with_context(|| format!("the server at {url} cannot be reached"))?;

    let result = drive(&o, &endpoint, pid, &mut spawned, target).await;
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

async fn drive(
    o: &Options,
    endpoint: &Endpoint,
    pid: Option<u32>,
    spawned: &mut Option<Spawned>,
    target: String,
) -> Result<Report> {
    progress(o, "setting up accounts and files");
    let made = setup::run(endpoint, o).await?;
    let plans = setup::plan(o);
    let m = Measures::new();
    let stop = Arc::new(AtomicBool::new(false));
    let collected = Arc::new(Mutex::new(Collected {
        phase: "connect",
        ..Default::default()
    }));
    let before = server::sample(endpoint, pid).await;
    let probe = tokio::spawn(measure::probe(m.clone(), stop.clone()));
    let sampler = tokio::spawn(sampler(
        m.clone(),
        endpoint.clone(),
        pid,
        collected.clone(),
        stop.clone(),
        o.clone(),
    ));

    // Ramp: connection i opens at i / ramp seconds.
    let (end_tx, end_rx) = watch::channel(End::Running);
    let start = tokio::time::Instant::now();
    let mut handles: Vec<JoinHandle<()>> = Vec::with_capacity(plans.len());
    for plan in &plans {
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
            plan: plan.clone(),
        };
        handles.push(tokio::spawn(client.run()));
        if plan.index % 100 == 0 {
            progress(o, &format!("connecting {}/{}", plan.index, o.users));
        }
    }
    let settled = tokio::time::Instant::now() + Duration::from_secs(15);
    let resolved = || {
        m.counters.connected.load(Ordering::Relaxed)
            + m.counters.connection_errors.load(Ordering::Relaxed)
    };
    while resolved() < o.users as u64 && tokio::time::Instant::now() < settled {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    let s0 = server::sample(endpoint, pid).await;
    let (c0, g0, t0) = (m.snapshot(), measure::own_cpu_seconds(), Instant::now());
    let busy0 = measure::machine_cpu_seconds();
    m.set_measuring(true);
    let window_end = tokio::time::Instant::now() + Duration::from_secs_f64(o.duration);
    while tokio::time::Instant::now() < window_end {
        let left = window_end - tokio::time::Instant::now();
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
    let (c1, g1, window) = (m.snapshot(), measure::own_cpu_seconds(), t0.elapsed());
    let busy1 = measure::machine_cpu_seconds();
    let s1 = server::sample(endpoint, pid).await;
    let recorded = match recorder {
        Some(rec) => Some(tokio::task::spawn_blocking(move || rec.stop()).await?),
        None => None,
    };
    let open_at_end = m.counters.open.load(Ordering::Relaxed);

    // The end: a clean close, or everyone dropping at once.
    let drop_result = if o.drop {
        set_phase(&collected, "drop");
        progress(o, "dropping every socket at once");
        Some(drop_all(&end_tx, endpoint, spawned).await)
    } else {
        set_phase(&collected, "close");
        progress(o, "closing");
        let _ = end_tx.send(End::Quiet);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let _ = end_tx.send(End::Close);
        None
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        for h in handles {
            let _ = h.await;
        }
    })
    .await;
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
        patch_relay_ms: Measures::total(&m.relay),
        patch_ack_ms: Measures::total(&m.ack),
        presence_ms: Measures::total(&m.presence),
        expected: expected(&plans, o),
        problems: problems(&m),
        memory: collected.memory,
        seconds: collected.seconds,
        drop: drop_result,
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
        if server::health(endpoint, Duration::from_millis(500))
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
        if let Ok(Some(st)) = server::health(endpoint, Duration::from_millis(500)).await {
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
        let env: BTreeMap<_, _> = spawn_env(&o).into_iter().collect();
        assert_eq!(env["ATRIUM_HEALTH_STATS"], "1");
        assert_eq!(env["ATRIUM_WS_PER_IP"], "7");
        assert_eq!(env["ATRIUM_WS_PER_ACCOUNT"], "40");
        assert_eq!(env["ATRIUM_AUTH_PER_IP_PER_MINUTE"], "1000000");
    }
}
