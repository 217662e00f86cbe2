//! Command-line options, the `--config` file, and how the two merge.
//!
//! Every option can be given on the command line or in the JSON config file (same names, with
//! dashes or underscores); the command line wins. The config file's `env` object and the
//! repeatable `--env K=V` set the spawned node's settings, `--env` winning per key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde::Deserialize;

/// The ramp of `--storm`: the most `--ramp` allows, so every socket opens at once.
pub const STORM_RAMP: f64 = 1_000_000.0;

/// How perf unwinds stacks unless `--profile-call-graph` says otherwise.
pub const DEFAULT_CALL_GRAPH: &str = "dwarf";

/// The command line. Everything is optional so a config file can fill what is left out.
#[derive(Parser, Debug, Default, Clone)]
#[command(
    name = "atrium-loadtest",
    version,
    about = "Open-loop load generator for Atrium nodes: many live sockets editing and moving cursors, \
             with latency, throughput, CPU and memory measures"
)]
pub struct Cli {
    /// Start a scratch node (temporary data folder, free port), stopped and removed afterwards
    #[arg(long)]
    pub spawn: bool,
    /// Start N atrium-node processes behind one atrium-router (cluster mode, Postgres + NATS);
    /// the clients connect through the router
    #[arg(long, value_name = "N")]
    pub spawn_cluster: Option<usize>,
    /// With --spawn-cluster: kill -9 the node holding the most files this many seconds into
    /// the measured window, and report the failover (the same as --fault kill --fault-at S)
    #[arg(long, value_name = "SECONDS")]
    pub kill_node: Option<f64>,
    /// With --spawn-cluster: the fault to inject in the measured window, and report what it
    /// cost: kill (kill -9 the busiest node), pause (SIGSTOP it past its lease, then SIGCONT),
    /// rolling (SIGTERM and restart every node in turn), coordinator (kill -9 nats-server, start
    /// it again), store (stop Postgres, start it again), router (kill -9 the router, start it
    /// again)
    #[arg(long, value_enum, value_name = "KIND")]
    pub fault: Option<FaultKind>,
    /// Seconds into the measured window when --fault starts (default: a quarter of --duration)
    #[arg(long, value_name = "SECONDS")]
    pub fault_at: Option<f64>,
    /// How long pause, coordinator, store and router faults last, in ms (default: the lease
    /// plus 2 s for pause, 1000 for router, 3000 for coordinator and store)
    #[arg(long, value_name = "MS")]
    pub fault_for: Option<u64>,
    /// The atrium-router binary for --spawn-cluster (default: next to this tool, then on PATH)
    #[arg(long, value_name = "PATH")]
    pub router: Option<PathBuf>,
    /// The atrium-node binary to spawn (default: next to this tool, then on PATH)
    #[arg(long, value_name = "PATH")]
    pub server: Option<PathBuf>,
    /// Port for the spawned node (default: a free one)
    #[arg(long)]
    pub port: Option<u16>,
    /// Target a running node or router instead of spawning one, e.g. http://127.0.0.1:8080
    #[arg(long)]
    pub url: Option<String>,
    /// Allow a --url that is not on this machine (thousands of sockets look like an attack)
    #[arg(long)]
    pub i_have_permission: bool,
    /// A setting for the spawned node, K=V (repeatable; wins over the config file's env)
    #[arg(long = "env", value_name = "K=V")]
    pub env: Vec<String>,
    /// JSON file with options and an "env" object; the command line wins
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// WebSocket clients to open
    #[arg(long)]
    pub users: Option<usize>,
    /// Files the clients are spread over
    #[arg(long)]
    pub files: Option<usize>,
    /// Pages per file (each with 20 rectangles)
    #[arg(long)]
    pub pages: Option<usize>,
    /// Accounts to sign up; clients beyond accounts x per-account are guests
    #[arg(long)]
    pub accounts: Option<usize>,
    /// Clients signed in per account
    #[arg(long)]
    pub per_account: Option<usize>,
    /// Fraction of clients that join with the edit key and edit (every 1/editors-th client)
    #[arg(long)]
    pub editors: Option<f64>,
    /// Patches a second per editor
    #[arg(long)]
    pub edit_rate: Option<f64>,
    /// Presence updates a second per client (the server's presence-rate caps it)
    #[arg(long)]
    pub presence_rate: Option<f64>,
    /// New connections a second while connecting
    #[arg(long)]
    pub ramp: Option<f64>,
    /// Connect every socket at once (no ramp), as a dead node's people come back
    #[arg(long, conflicts_with = "ramp")]
    pub storm: bool,
    /// Seconds of load before measuring
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Seconds measured
    #[arg(long)]
    pub duration: Option<f64>,
    /// Name of the run, shown in the report
    #[arg(long)]
    pub label: Option<String>,
    /// Write the report as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML page with plots and the report's tables to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// With --spawn: profile the node's CPU over the measured window with Linux perf, into DIR
    /// (perf.data, stacks.folded, flamegraph.svg)
    #[arg(long, value_name = "DIR")]
    pub profile: Option<PathBuf>,
    /// How perf unwinds the node's stacks for --profile: dwarf (default), or fp for a node built
    /// with frame pointers
    #[arg(long, value_name = "MODE")]
    pub profile_call_graph: Option<String>,
    /// After the run, drop every socket at once without a close handshake and time /health
    #[arg(long)]
    pub drop: bool,
    /// Print a line a second: throughput, latency, server CPU
    #[arg(long)]
    pub verbose: bool,
    /// Generator threads (default: the machine's cores)
    #[arg(long, alias = "threads")]
    pub workers: Option<usize>,
}

/// The config file: the same options, plus `env`.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    #[serde(default)]
    pub spawn: Option<bool>,
    pub server: Option<PathBuf>,
    #[serde(alias = "spawn_cluster")]
    pub spawn_cluster: Option<usize>,
    #[serde(alias = "kill_node")]
    pub kill_node: Option<f64>,
    pub fault: Option<FaultKind>,
    #[serde(alias = "fault_at")]
    pub fault_at: Option<f64>,
    #[serde(alias = "fault_for")]
    pub fault_for: Option<u64>,
    pub router: Option<PathBuf>,
    pub port: Option<u16>,
    pub url: Option<String>,
    #[serde(alias = "i_have_permission")]
    pub i_have_permission: Option<bool>,
    #[serde(default)]
    pub env: BTreeMap<String, serde_json::Value>,
    pub users: Option<usize>,
    pub files: Option<usize>,
    pub pages: Option<usize>,
    pub accounts: Option<usize>,
    #[serde(alias = "per_account")]
    pub per_account: Option<usize>,
    pub editors: Option<f64>,
    #[serde(alias = "edit_rate")]
    pub edit_rate: Option<f64>,
    #[serde(alias = "presence_rate")]
    pub presence_rate: Option<f64>,
    pub ramp: Option<f64>,
    pub storm: Option<bool>,
    pub warmup: Option<f64>,
    pub duration: Option<f64>,
    pub label: Option<String>,
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub profile: Option<PathBuf>,
    #[serde(alias = "profile_call_graph")]
    pub profile_call_graph: Option<String>,
    pub drop: Option<bool>,
    pub verbose: Option<bool>,
    #[serde(alias = "threads")]
    pub workers: Option<usize>,
}

/// A fault injected into a spawned cluster under load (`--fault`).
#[derive(clap::ValueEnum, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// `kill -9` of the node holding the most files.
    Kill,
    /// SIGSTOP of the node holding the most files for longer than its lease, then SIGCONT: the
    /// others take its files, and the woken node must not write.
    Pause,
    /// SIGTERM of every node in turn, each started again and back in the ring before the next.
    Rolling,
    /// `kill -9` of the coordinator's nats-server, started again on the same port and store.
    Coordinator,
    /// Postgres stopped (fast shutdown), started again on the same port and data.
    Store,
    /// `kill -9` of the router, started again on the same ports.
    Router,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Rolling => "rolling",
            FaultKind::Coordinator => "coordinator",
            FaultKind::Store => "store",
            FaultKind::Router => "router",
        }
    }

    /// Faults on a shared service need servers of the run's own (stopping the suite's shared
    /// Postgres or nats-server would break every other test using it).
    pub fn needs_own_store(self) -> bool {
        self == FaultKind::Store
    }

    pub fn needs_own_coordinator(self) -> bool {
        self == FaultKind::Coordinator
    }

    /// Whether the rest of the fleet should go on serving every file while the fault lasts (a
    /// dead, paused or draining node's files move to the others), so that recovery counts from
    /// the fault striking rather than from its end.
    pub fn served_meanwhile(self) -> bool {
        matches!(
            self,
            FaultKind::Kill | FaultKind::Pause | FaultKind::Rolling
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    pub kind: FaultKind,
    /// Seconds into the measured window.
    pub at: f64,
    /// How long a pause or an outage lasts; None for the default.
    pub hold_ms: Option<u64>,
}

/// Where the load goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Spawn a scratch node from this binary, optionally on a chosen port.
    Spawn { server: Option<PathBuf>, port: u16 },
    /// A running node or router at this base URL (`http://host:port`, no trailing slash).
    Url(String),
    /// `nodes` spawned nodes behind one spawned router.
    Cluster {
        nodes: usize,
        server: Option<PathBuf>,
        router: Option<PathBuf>,
    },
}

/// The options of one run, after merging and checking.
#[derive(Debug, Clone)]
pub struct Options {
    pub target: Target,
    /// `--fault` (or `--kill-node`): what to break, and when.
    pub fault: Option<Fault>,
    pub i_have_permission: bool,
    pub env: BTreeMap<String, String>,
    pub users: usize,
    pub files: usize,
    pub pages: usize,
    pub accounts: usize,
    pub per_account: usize,
    pub editors: f64,
    pub edit_rate: f64,
    pub presence_rate: f64,
    pub ramp: f64,
    /// Every socket connected at once (`--storm`): `ramp` is then [`STORM_RAMP`].
    pub storm: bool,
    pub warmup: f64,
    pub duration: f64,
    pub label: String,
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// Folder for the spawned node's CPU profile.
    pub profile: Option<PathBuf>,
    /// perf's `--call-graph` mode for the profile.
    pub profile_call_graph: String,
    pub drop: bool,
    pub verbose: bool,
    pub workers: usize,
}

fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// A config value for the environment: strings as they are, numbers and booleans as written.
fn env_value(value: &serde_json::Value) -> Result<String> {
    Ok(match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Bool(b) => b.to_string(),
        other => bail!("env values must be strings, numbers or booleans, not {other}"),
    })
}

/// Merges the command line over the config file over the defaults, and checks the result.
pub fn merge(cli: Cli, file: FileConfig) -> Result<Options> {
    let mut env = BTreeMap::new();
    for (key, value) in &file.env {
        env.insert(key.clone(), env_value(value)?);
    }
    for pair in &cli.env {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("--env takes K=V, got {pair:?}");
        };
        if key.is_empty() {
            bail!("--env takes K=V, got {pair:?}");
        }
        env.insert(key.to_string(), value.to_string());
    }

    let fault = fault(&cli, &file, cli.duration.or(file.duration).unwrap_or(30.0))?;
    let spawn = cli.spawn || file.spawn.unwrap_or(false);
    let url_given = |a: &Option<String>, b: &Option<String>| a.is_some() || b.is_some();
    let url = cli.url.clone().or(file.url.clone());
    let cluster = cli.spawn_cluster.or(file.spawn_cluster);
    let server = cli.server.or(file.server);
    let target = match (spawn, url, cluster) {
        (_, _, Some(n)) => {
            if spawn || url_given(&cli.url, &file.url) {
                bail!("give one of --spawn, --spawn-cluster N or --url");
            }
            if n == 0 || n > 64 {
                bail!("--spawn-cluster must be between 1 and 64, got {n}");
            }
            Target::Cluster {
                nodes: n,
                server,
                router: cli.router.or(file.router),
            }
        }
        (true, Some(_), None) => bail!("give either --spawn or --url, not both"),
        (false, None, None) => bail!(
            "give --spawn (start a scratch node), --spawn-cluster N (nodes behind a router) or \
             --url URL (a running one)"
        ),
        (true, None, None) => Target::Spawn {
            server,
            port: cli.port.or(file.port).unwrap_or(0),
        },
        (false, Some(url), None) => Target::Url(normalize_url(&url)?),
    };

    let users = cli.users.or(file.users).unwrap_or(200);
    let storm = cli.storm || file.storm.unwrap_or(false);
    let options = Options {
        target,
        fault,
        i_have_permission: cli.i_have_permission || file.i_have_permission.unwrap_or(false),
        env,
        users,
        files: cli
            .files
            .or(file.files)
            .unwrap_or(users.div_ceil(10).max(1)),
        pages: cli.pages.or(file.pages).unwrap_or(2),
        accounts: cli.accounts.or(file.accounts).unwrap_or(10),
        per_account: cli.per_account.or(file.per_account).unwrap_or(10),
        editors: cli.editors.or(file.editors).unwrap_or(0.1),
        edit_rate: cli.edit_rate.or(file.edit_rate).unwrap_or(2.0),
        presence_rate: cli.presence_rate.or(file.presence_rate).unwrap_or(20.0),
        ramp: if storm {
            STORM_RAMP
        } else {
            cli.ramp.or(file.ramp).unwrap_or(500.0)
        },
        storm,
        warmup: cli.warmup.or(file.warmup).unwrap_or(3.0),
        duration: cli.duration.or(file.duration).unwrap_or(30.0),
        label: cli.label.or(file.label).unwrap_or_default(),
        json: cli.json.or(file.json),
        html: cli.html.or(file.html),
        profile: cli.profile.or(file.profile),
        profile_call_graph: cli
            .profile_call_graph
            .or(file.profile_call_graph)
            .unwrap_or_else(|| DEFAULT_CALL_GRAPH.to_string()),
        drop: cli.drop || file.drop.unwrap_or(false),
        verbose: cli.verbose || file.verbose.unwrap_or(false),
        workers: cli.workers.or(file.workers).unwrap_or_else(default_workers),
    };
    check(&options)?;
    Ok(options)
}

fn check(o: &Options) -> Result<()> {
    let finite = |name: &str, v: f64, min: f64, max: f64| -> Result<()> {
        if !v.is_finite() || v < min || v > max {
            bail!("--{name} must be between {min} and {max}, got {v}");
        }
        Ok(())
    };
    if o.users == 0 || o.users > 100_000 {
        bail!("--users must be between 1 and 100000, got {}", o.users);
    }
    if o.files == 0 || o.files > o.users {
        bail!(
            "--files must be between 1 and --users ({}), got {}",
            o.users,
            o.files
        );
    }
    if o.pages == 0 || o.pages > 100 {
        bail!("--pages must be between 1 and 100, got {}", o.pages);
    }
    if o.accounts > 10_000 {
        bail!("--accounts must be at most 10000, got {}", o.accounts);
    }
    if o.per_account == 0 {
        bail!("--per-account must be at least 1");
    }
    finite("editors", o.editors, 0.0, 1.0)?;
    finite("edit-rate", o.edit_rate, 0.0, 1000.0)?;
    finite("presence-rate", o.presence_rate, 0.0, 1000.0)?;
    finite("ramp", o.ramp, 0.001, 1_000_000.0)?;
    finite("warmup", o.warmup, 0.0, 3600.0)?;
    finite("duration", o.duration, 0.1, 3600.0)?;
    if o.profile.is_some() && !matches!(o.target, Target::Spawn { .. }) {
        bail!("--profile needs --spawn: only a node this tool started can be profiled");
    }
    let mode = &o.profile_call_graph;
    if mode.is_empty() || !mode.chars().all(|c| c.is_ascii_alphanumeric() || c == ',') {
        bail!(
            "--profile-call-graph takes a perf --call-graph mode such as dwarf or fp, got {mode:?}"
        );
    }
    if let Some(f) = o.fault {
        let Target::Cluster { nodes, .. } = o.target else {
            bail!("--fault and --kill-node need --spawn-cluster N");
        };
        // A node-level fault needs the rest of the fleet to serve the node's files.
        if f.kind.served_meanwhile() && nodes < 2 {
            bail!(
                "--fault {} needs at least 2 nodes (--spawn-cluster 2 or more)",
                f.kind.name()
            );
        }
        finite("fault-at", f.at, 0.0, o.duration)?;
        if let Some(ms) = f.hold_ms {
            if !(1..=600_000).contains(&ms) {
                bail!("--fault-for must be between 1 and 600000 ms, got {ms}");
            }
        }
    }
    if o.workers == 0 || o.workers > 1024 {
        bail!("--workers must be between 1 and 1024, got {}", o.workers);
    }
    Ok(())
}

/// `--fault KIND [--fault-at S] [--fault-for MS]`, or `--kill-node S` for `--fault kill`.
fn fault(cli: &Cli, file: &FileConfig, duration: f64) -> Result<Option<Fault>> {
    let kill_at = cli.kill_node.or(file.kill_node);
    let kind = cli.fault.or(file.fault);
    let at = cli.fault_at.or(file.fault_at);
    let hold_ms = cli.fault_for.or(file.fault_for);
    match (kind, kill_at) {
        (Some(k), Some(_)) if k != FaultKind::Kill => {
            bail!(
                "--kill-node is --fault kill: give one of --kill-node and --fault {}",
                k.name()
            )
        }
        (_, Some(s)) => Ok(Some(Fault {
            kind: FaultKind::Kill,
            at: at.unwrap_or(s),
            hold_ms,
        })),
        (Some(kind), None) => Ok(Some(Fault {
            kind,
            at: at.unwrap_or(duration / 4.0),
            hold_ms,
        })),
        (None, None) if at.is_some() || hold_ms.is_some() => {
            bail!("--fault-at and --fault-for need --fault KIND")
        }
        (None, None) => Ok(None),
    }
}

/// Accepts `http://host:port[/]` (or `ws://`); TLS is not supported.
pub fn normalize_url(url: &str) -> Result<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("ws://"))
        .with_context(|| {
            format!("--url must start with http:// (TLS is not supported), got {url:?}")
        })?;
    let host = rest.trim_end_matches('/');
    if host.is_empty() || host.contains('/') {
        bail!("--url must be a base address like http://127.0.0.1:8080, got {url:?}");
    }
    Ok(format!("http://{host}"))
}

/// Reads the config file named by `--config`, if any.
pub fn load_file(cli: &Cli) -> Result<FileConfig> {
    let Some(path) = &cli.config else {
        return Ok(FileConfig::default());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --config {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("bad --config {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> Cli {
        let mut all = vec!["atrium-loadtest"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all).unwrap()
    }

    #[test]
    fn a_storm_opens_every_socket_at_once_and_excludes_a_ramp() {
        let o = merge(cli(&["--spawn", "--storm"]), FileConfig::default()).unwrap();
        assert!(o.storm);
        assert_eq!(o.ramp, STORM_RAMP);
        assert_eq!(crate::schedule::connect_at(2_000, o.ramp).as_millis(), 2);
        assert!(Cli::try_parse_from(["atrium-loadtest", "--storm", "--ramp", "10"]).is_err());
        let o = merge(cli(&["--spawn"]), FileConfig::default()).unwrap();
        assert!(!o.storm);
    }

    fn file(json: &str) -> FileConfig {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let o = merge(cli(&["--spawn"]), FileConfig::default()).unwrap();
        assert_eq!(
            o.target,
            Target::Spawn {
                server: None,
                port: 0
            }
        );
        assert_eq!((o.users, o.files, o.pages), (200, 20, 2));
        assert_eq!((o.editors, o.edit_rate, o.presence_rate), (0.1, 2.0, 20.0));
        assert_eq!((o.warmup, o.duration), (3.0, 30.0));
    }

    #[test]
    fn command_line_wins_over_config_file() {
        let f = file(
            r#"{"users": 500, "files": 5, "per_account": 3, "edit-rate": 4,
                "env": {"ATRIUM_ROOM_EDITORS": "50", "ATRIUM_PRESENCE_HZ": 10, "X": true}}"#,
        );
        let c = cli(&["--spawn", "--users", "40", "--env", "ATRIUM_PRESENCE_HZ=5"]);
        let o = merge(c, f).unwrap();
        assert_eq!(o.users, 40);
        assert_eq!(o.files, 5);
        assert_eq!(o.per_account, 3);
        assert_eq!(o.edit_rate, 4.0);
        assert_eq!(o.env["ATRIUM_ROOM_EDITORS"], "50");
        assert_eq!(o.env["ATRIUM_PRESENCE_HZ"], "5");
        assert_eq!(o.env["X"], "true");
        let f = file(r#"{"spawn": true, "html": "a.html", "profile": "prof"}"#);
        let o = merge(cli(&["--html", "b.html"]), f).unwrap();
        assert_eq!(o.html, Some(PathBuf::from("b.html")));
        assert_eq!(o.profile, Some(PathBuf::from("prof")));
    }

    #[test]
    fn config_file_can_choose_the_target() {
        let o = merge(cli(&[]), file(r#"{"url": "http://127.0.0.1:9/"}"#)).unwrap();
        assert_eq!(o.target, Target::Url("http://127.0.0.1:9".into()));
        let o = merge(cli(&["--port", "4000"]), file(r#"{"spawn": true}"#)).unwrap();
        assert_eq!(
            o.target,
            Target::Spawn {
                server: None,
                port: 4000
            }
        );
    }

    #[test]
    fn bad_options_are_refused_with_a_reason() {
        let err = |c: Cli, f: FileConfig| merge(c, f).unwrap_err().to_string();
        assert!(err(cli(&[]), FileConfig::default()).contains("--spawn"));
        assert!(err(
            cli(&["--spawn", "--url", "http://a:1"]),
            FileConfig::default()
        )
        .contains("not both"));
        assert!(
            err(cli(&["--spawn", "--editors", "2"]), FileConfig::default()).contains("--editors")
        );
        assert!(err(
            cli(&["--spawn", "--env", "NOEQUALS"]),
            FileConfig::default()
        )
        .contains("K=V"));
        assert!(err(cli(&["--url", "https://x:1"]), FileConfig::default()).contains("TLS"));
        assert!(err(
            cli(&["--spawn", "--users", "5", "--files", "6"]),
            FileConfig::default()
        )
        .contains("--files"));
        assert!(serde_json::from_str::<FileConfig>(r#"{"userz": 1}"#).is_err());
        assert!(err(
            cli(&["--url", "http://127.0.0.1:9", "--profile", "p"]),
            FileConfig::default()
        )
        .contains("--profile needs --spawn"));
    }

    #[test]
    fn cluster_options_are_checked() {
        let o = merge(
            cli(&[
                "--spawn-cluster",
                "3",
                "--kill-node",
                "2",
                "--duration",
                "5",
            ]),
            FileConfig::default(),
        )
        .unwrap();
        assert!(matches!(o.target, Target::Cluster { nodes: 3, .. }));
        assert_eq!(
            o.fault,
            Some(Fault {
                kind: FaultKind::Kill,
                at: 2.0,
                hold_ms: None
            })
        );
        let o = merge(
            cli(&[
                "--spawn-cluster",
                "3",
                "--fault",
                "store",
                "--duration",
                "8",
            ]),
            FileConfig::default(),
        )
        .unwrap();
        assert_eq!(
            o.fault.map(|f| (f.kind, f.at)),
            Some((FaultKind::Store, 2.0))
        );
        let f = file(r#"{"spawn-cluster": 1, "fault": "router", "fault-for": 500}"#);
        let o = merge(cli(&[]), f).unwrap();
        assert_eq!(o.fault.and_then(|f| f.hold_ms), Some(500));
        let err = |c: Cli| merge(c, FileConfig::default()).unwrap_err().to_string();
        assert!(err(cli(&["--spawn", "--kill-node", "1"])).contains("--spawn-cluster"));
        assert!(err(cli(&["--spawn-cluster", "1", "--kill-node", "1"])).contains("2 nodes"));
        assert!(err(cli(&["--spawn-cluster", "1", "--fault", "rolling"])).contains("2 nodes"));
        assert!(err(cli(&["--spawn-cluster", "2", "--fault-at", "1"])).contains("--fault KIND"));
        assert!(err(cli(&[
            "--spawn-cluster",
            "2",
            "--fault",
            "pause",
            "--kill-node",
            "1"
        ]))
        .contains("one of"));
        assert!(err(cli(&["--spawn-cluster", "2", "--spawn"])).contains("one of"));
        assert!(err(cli(&[
            "--spawn-cluster",
            "2",
            "--kill-node",
            "9",
            "--duration",
            "5"
        ]))
        .contains("fault-at"));
        let f = file(r#"{"spawn-cluster": 2, "kill_node": 1}"#);
        let o = merge(cli(&[]), f).unwrap();
        assert!(matches!(o.target, Target::Cluster { nodes: 2, .. }));
    }

    #[test]
    fn files_default_to_rooms_of_ten() {
        let o = merge(cli(&["--spawn", "--users", "1000"]), FileConfig::default()).unwrap();
        assert_eq!(o.files, 100);
        let o = merge(cli(&["--spawn", "--users", "5"]), FileConfig::default()).unwrap();
        assert_eq!(o.files, 1);
    }
}
