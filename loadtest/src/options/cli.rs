//! The options as given: the command line, and the `--config` file with the same names.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Parser;
use serde::Deserialize;

use super::FaultKind;

/// The options as given, on the command line or in the `--config` file (same names, with
/// dashes or underscores). Everything is optional so a config file can fill what is left out.
#[derive(Parser, Deserialize, Debug, Default, Clone)]
#[command(
    name = "atrium-loadtest",
    version,
    about = "Open-loop load generator for Atrium nodes: many live sockets editing and moving cursors, \
             with latency, throughput, CPU and memory measures"
)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Cli {
    /// Start a scratch node (temporary data folder, free port), stopped and removed afterwards
    #[arg(long)]
    pub spawn: bool,
    /// Start N atrium-node processes behind one atrium-router (cluster mode, Postgres + NATS);
    /// the clients connect through the router
    #[arg(long, value_name = "N")]
    #[serde(alias = "spawn_cluster")]
    pub spawn_cluster: Option<usize>,
    /// With --spawn-cluster: kill -9 the node holding the most files this many seconds into
    /// the measured window, and report the failover (the same as --fault kill --fault-at S)
    #[arg(long, value_name = "SECONDS")]
    #[serde(alias = "kill_node")]
    pub kill_node: Option<f64>,
    /// With --spawn-cluster: the fault to inject in the measured window, and report what it
    /// cost: kill (kill -9 the busiest node), pause (SIGSTOP it past its lease, then SIGCONT),
    /// rolling (SIGTERM and restart every node in turn), coordinator (kill -9 nats-server, start
    /// it again), store (stop Postgres, start it again), router (kill -9 the router, start it
    /// again), router-of-two and stale-router (with --routers 2 or more), and more: see
    /// docs/loadtest.md
    #[arg(long, value_enum, value_name = "KIND")]
    pub fault: Option<FaultKind>,
    /// Seconds into the measured window when --fault starts (default: a quarter of --duration)
    #[arg(long, value_name = "SECONDS")]
    #[serde(alias = "fault_at")]
    pub fault_at: Option<f64>,
    /// How long pause, coordinator, store and router faults last, in ms (default: the lease
    /// plus 2 s for pause, 1000 for router, 3000 for coordinator and store)
    #[arg(long, value_name = "MS")]
    #[serde(alias = "fault_for")]
    pub fault_for: Option<u64>,
    /// With --spawn-cluster: how many atrium-router processes run in front of the nodes
    /// (default 1); clients are spread over them in turn, as a load balancer would
    #[arg(long, value_name = "N")]
    pub routers: Option<usize>,
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
    #[serde(alias = "i_have_permission")]
    pub i_have_permission: bool,
    /// A setting for the spawned node, K=V (repeatable; wins over the config file's env)
    #[arg(long = "env", value_name = "K=V")]
    #[serde(skip)]
    pub env: Vec<String>,
    /// The config file's `env` object (the command line has `--env` instead)
    #[arg(skip)]
    #[serde(rename = "env")]
    pub env_object: BTreeMap<String, serde_json::Value>,
    /// JSON file with options and an "env" object; the command line wins
    #[arg(long, value_name = "FILE")]
    #[serde(skip)]
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
    /// Mint app tokens (HS256 with this secret, at least 32 bytes) for the simulated people
    /// instead of signing up accounts; a spawned node is set up to take them
    #[arg(long, value_name = "SECRET")]
    #[serde(alias = "jwt_secret")]
    pub jwt_secret: Option<String>,
    /// Mint app tokens with this PEM private key (RS256, ES256 or EdDSA by its type); the
    /// node needs its public key (--env ATRIUM_APP_TOKEN_PUBLIC_KEYS=...)
    #[arg(long, value_name = "PATH")]
    #[serde(alias = "jwt_key")]
    pub jwt_key: Option<PathBuf>,
    /// The `iss` of minted app tokens (default: atrium-loadtest)
    #[arg(long)]
    #[serde(alias = "jwt_issuer")]
    pub jwt_issuer: Option<String>,
    /// The `aud` of minted app tokens (default: atrium)
    #[arg(long)]
    #[serde(alias = "jwt_audience")]
    pub jwt_audience: Option<String>,
    /// The `kid` of minted app tokens (for a node reading keys from a JWKS)
    #[arg(long)]
    #[serde(alias = "jwt_kid")]
    pub jwt_kid: Option<String>,
    /// Accounts to sign up; clients beyond accounts x per-account are guests
    #[arg(long)]
    pub accounts: Option<usize>,
    /// Clients signed in per account
    #[arg(long)]
    #[serde(alias = "per_account")]
    pub per_account: Option<usize>,
    /// Fraction of clients that join with the edit key and edit (every 1/editors-th client)
    #[arg(long)]
    pub editors: Option<f64>,
    /// Patches a second per editor
    #[arg(long)]
    #[serde(alias = "edit_rate")]
    pub edit_rate: Option<f64>,
    /// Presence updates a second per client (the server's presence-rate caps it)
    #[arg(long)]
    #[serde(alias = "presence_rate")]
    pub presence_rate: Option<f64>,
    /// Restore a version of a file every this many seconds of the measured window, files in
    /// turn (each names its first version when first restored); 0 never restores
    #[arg(long)]
    #[serde(alias = "restore_every")]
    pub restore_every: Option<f64>,
    /// Patches a second from the app's server (`POST /api/files/{id}/patches`) during the
    /// measured window, files in turn; their latency is reported. 0: none
    #[arg(long)]
    #[serde(alias = "server_patches_per_s")]
    pub server_patches_per_s: Option<f64>,
    /// An API key of the `server` scope for --server-patches-per-s against a running node
    /// (--url); spawned nodes make their own
    #[arg(long, env = "ATRIUM_LOADTEST_API_KEY", hide_env_values = true)]
    #[serde(alias = "api_key")]
    pub api_key: Option<String>,
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
    #[serde(alias = "profile_call_graph")]
    pub profile_call_graph: Option<String>,
    /// After the run, drop every socket at once without a close handshake and time /health
    #[arg(long)]
    pub drop: bool,
    /// Print a line a second: throughput, latency, server CPU
    #[arg(long)]
    pub verbose: bool,
    /// Run the spawned node (or, with --spawn-cluster, every node and the router) only on
    /// these CPUs, e.g. 1 or 0-1
    #[arg(long, value_name = "CPUS")]
    #[serde(alias = "pin_server")]
    pub pin_server: Option<String>,
    /// Run this tool (every thread of it) only on these CPUs, e.g. 0
    #[arg(long, value_name = "CPUS")]
    #[serde(alias = "pin_generator")]
    pub pin_generator: Option<String>,
    /// Generator threads (default: the machine's cores)
    #[arg(long, alias = "threads")]
    #[serde(alias = "threads")]
    pub workers: Option<usize>,
}
