//! Command-line options, the `--config` file, and how the two merge.
//!
//! Every option can be given on the command line or in the JSON config file (same names, with
//! dashes or underscores); the command line wins. The config file's `env` object and the
//! repeatable `--env K=V` set the spawned node's settings, `--env` winning per key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::pin::CpuList;

/// The ramp of `--storm`: the most `--ramp` allows, so every socket opens at once.
pub const STORM_RAMP: f64 = 1_000_000.0;

/// How perf unwinds stacks unless `--profile-call-graph` says otherwise.
pub const DEFAULT_CALL_GRAPH: &str = "dwarf";

mod check;
mod cli;
mod fault;
mod file;
mod merge;

#[cfg(test)]
pub mod testing;
#[cfg(test)]
mod tests;

pub use cli::Cli;
pub use fault::{Fault, FaultKind};
pub use file::{load_file, FileConfig};
pub use merge::merge;

/// Where the load goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Spawn a scratch node from this binary, optionally on a chosen port.
    Spawn { server: Option<PathBuf>, port: u16 },
    /// A running node or router at this base URL (`http://host:port`, no trailing slash).
    Url(String),
    /// `nodes` spawned nodes behind `routers` spawned routers.
    Cluster {
        nodes: usize,
        routers: usize,
        server: Option<PathBuf>,
        router: Option<PathBuf>,
    },
}

/// How the simulated people's app tokens are signed (docs/auth.md).
#[derive(Debug, Clone, PartialEq)]
pub struct Jwt {
    pub secret: Option<String>,
    pub key: Option<PathBuf>,
    pub issuer: String,
    pub audience: String,
    pub kid: Option<String>,
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
    /// `--jwt-secret` / `--jwt-key`: app tokens instead of sign-ups.
    pub jwt: Option<Jwt>,
    pub editors: f64,
    pub edit_rate: f64,
    pub presence_rate: f64,
    /// Seconds between restores during the measured window (0: none).
    pub restore_every: f64,
    /// Server API patches a second during the measured window (0: none).
    pub server_patches_per_s: f64,
    /// The API key for them (`--api-key`); spawned nodes make one.
    pub api_key: Option<String>,
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
    /// `--pin-server`: the CPUs of the spawned node(s) and router.
    pub pin_server: Option<CpuList>,
    /// `--pin-generator`: the CPUs of this tool.
    pub pin_generator: Option<CpuList>,
}
