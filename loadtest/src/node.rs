//! The node under load: spawning a scratch one, asking `/health`, and reading a spawned
//! node's CPU and memory from /proc.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::options::Options;

mod health;
mod procfs;
mod spawned;

#[cfg(test)]
mod tests;

pub use atrium_testkit::cpu::{cpu_seconds_from_stat, process_cpu_seconds};
pub use health::{health, is_loopback, sample, Sample};
pub use procfs::{raise_nofile, rss_from_status};
pub use spawned::Spawned;

/// The settings a spawned node gets unless `--env` or the config file says otherwise: statistics
/// on, and the per-address (sockets, requests, document bytes, bytes sockets bring in),
/// per-account (sockets, open rooms' memory), sign-up and file-creation limits raised or off, since every
/// generated socket and sign-up comes from one address and one owner makes every file.
pub fn spawn_env(o: &Options) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    set("ATRIUM_HEALTH_STATS", "1".into());
    set("ATRIUM_WS_PER_IP", "1000000".into());
    set("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND", "0".into());
    set("ATRIUM_REQUESTS_PER_IP_PER_SECOND", "0".into());
    set("ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND", "0".into());
    set("ATRIUM_WS_BYTES_PER_IP_PER_SECOND", "0".into());
    set("ATRIUM_ROOM_MEMORY_SHARE", "off".into());
    set("ATRIUM_WS_PER_ACCOUNT", o.per_account.max(10).to_string());
    set("ATRIUM_AUTH_PER_IP_PER_MINUTE", "1000000".into());
    set("ATRIUM_AUTH_PER_EMAIL_PER_MINUTE", "1000000".into());
    // One owner makes every file of the run.
    set("ATRIUM_FILES_PER_ACCOUNT", "1000000".into());
    set("ATRIUM_FILE_CREATES_PER_MINUTE", "1000000".into());
    if o.server_patches_per_s > 0.0 {
        // Its server admin makes the API key; the key's rate must not be what is measured.
        set(
            "ATRIUM_ADMINS",
            crate::server_patches::LOADTEST_ADMIN.into(),
        );
        let rate = (o.server_patches_per_s * 2.0).ceil().max(50.0) as u64;
        set("ATRIUM_SERVER_API_PER_SECOND", rate.to_string());
    }
    for (k, v) in &o.env {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}

/// `atrium-node <id> listening on http://127.0.0.1:PORT` → the URL.
pub fn listening_url(line: &str) -> Option<String> {
    let (_, url) = line.split_once(" listening on ")?;
    let url = url.trim();
    url.starts_with("http://").then(|| url.to_string())
}

/// The node binary: the one given, else `atrium-node` next to this tool, else on PATH.
pub fn find_binary(given: Option<&Path>) -> PathBuf {
    if let Some(path) = given {
        return path.to_path_buf();
    }
    if let Ok(me) = std::env::current_exe() {
        if let Some(dir) = me.parent() {
            let beside = dir.join("atrium-node");
            if beside.is_file() {
                return beside;
            }
        }
    }
    PathBuf::from("atrium-node")
}
