//! Link faults the kernel makes: packets dropped on loopback by nftables rules that match the
//! sending process by its cgroup (v2), so one node can be cut from the coordinator, from
//! Postgres, from the router or from everything while the rest of the machine talks on.
//!
//! A run with a link fault puts each node and each router in a cgroup of its own
//! (`atrium-lt-<pid>-<name>` under the cgroup2 mount; a process moves itself there before it
//! runs, so every socket it opens carries the cgroup) and makes an nftables table
//! `inet atrium_lt_<pid>` with one output chain. A fault adds drop rules to the chain; healing
//! flushes it. The table and the cgroups go when the cluster stops, and a later run removes
//! those of runs that died without cleaning up.
//!
//! Delay is made by the kernel's queue: see [`super::delay`].
//!
//! Needs root, the `nft` and `iptables` commands (Debian's `nftables` and `iptables`;
//! `scripts/test.sh` installs them) and a cgroup2 mount.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

const PREFIX: &str = "atrium_lt_";

/// The run's cgroups and its nftables table.
pub struct Links {
    table: String,
    /// The cgroup2 mount.
    root: PathBuf,
    groups: Vec<PathBuf>,
    /// Packets being delayed.
    delay: Option<super::delay::Delayer>,
}

impl Links {
    pub fn new() -> Result<Links> {
        let root = cgroup2_mount()
            .context("link faults match processes by cgroup: no cgroup2 mount in /proc/mounts")?;
        nft(&["list", "tables"]).context(
            "link faults drop packets with nftables: install it (`apt-get install nftables`; \
             scripts/test.sh does) and run as root",
        )?;
        sweep_stale(&root);
        let table = format!("{PREFIX}{}", std::process::id());
        nft(&["add", "table", "inet", &table])?;
        nft(&[
            "add",
            "chain",
            "inet",
            &table,
            "out",
            "{ type filter hook output priority 0; }",
        ])?;
        Ok(Links {
            table,
            root,
            groups: Vec::new(),
            delay: None,
        })
    }

    /// The cgroup of `name` (a node id, `router`, `router-1`, ...), made on first use.
    pub fn group(&mut self, name: &str) -> Result<PathBuf> {
        let dir = self
            .root
            .join(format!("atrium-lt-{}-{name}", std::process::id()));
        if !dir.is_dir() {
            std::fs::create_dir(&dir)
                .with_context(|| format!("making the cgroup {}", dir.display()))?;
            self.groups.push(dir.clone());
        }
        Ok(dir)
    }

    /// Drops what processes in `name`'s cgroup send that matches `filter` (nft syntax, e.g.
    /// `tcp dport 5432`; empty: everything).
    pub fn drop_from(&mut self, name: &str, filter: &str) -> Result<()> {
        let group = self.group(name)?;
        // nft names a cgroup by its path below /sys/fs/cgroup.
        let rel = group
            .strip_prefix("/sys/fs/cgroup")
            .unwrap_or(&group)
            .to_string_lossy()
            .trim_start_matches('/')
            .to_owned();
        // The run's cgroups are children of the hierarchy's root: level 1.
        let rule = format!("socket cgroupv2 level 1 \"{rel}\" {filter} drop");
        self.add_rule(&rule)
    }

    /// Drops every packet, from any process, that matches `filter`.
    pub fn drop_all(&self, filter: &str) -> Result<()> {
        self.add_rule(&format!("{filter} drop"))
    }

    fn add_rule(&self, rule: &str) -> Result<()> {
        let mut args = vec!["add", "rule", "inet", &self.table, "out"];
        args.extend(rule.split_whitespace());
        nft(&args)
    }

    /// Holds every packet sent to one of `ports` for `delay` before it goes on.
    pub fn delay_to(&mut self, ports: &[u16], delay: std::time::Duration) -> Result<()> {
        if self.delay.is_some() {
            bail!("one delay at a time");
        }
        self.delay = Some(super::delay::Delayer::start(ports, delay)?);
        Ok(())
    }

    /// Every link whole again.
    pub fn heal(&mut self) -> Result<()> {
        // Its rule goes, and it gives back what it still holds.
        self.delay = None;
        nft(&["flush", "chain", "inet", &self.table, "out"])
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        self.delay = None;
        let _ = nft(&["delete", "table", "inet", &self.table]);
        for g in &self.groups {
            remove_group(g);
        }
    }
}

/// A command that moves itself into `group` before it runs.
pub fn place_in(cmd: &mut Command, group: &Path) {
    let procs = CString::new(group.join("cgroup.procs").as_os_str().as_encoded_bytes())
        .expect("no NUL in a cgroup path");
    // SAFETY: open, write and close are async-signal-safe; the path was built before the fork
    // and nothing is allocated in the child.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // "0": the writing process itself.
            let wrote = libc::write(fd, b"0".as_ptr().cast(), 1);
            libc::close(fd);
            if wrote != 1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn nft(args: &[&str]) -> Result<()> {
    super::filter::run("nft", args)
}

fn cgroup2_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == "cgroup2")
        .map(|f| PathBuf::from(f[1]))
}

/// A cgroup goes once its processes have: moves any left to the root first.
fn remove_group(g: &Path) {
    for _ in 0..20 {
        if std::fs::remove_dir(g).is_ok() || !g.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Removes the tables and cgroups of earlier runs whose process is gone.
fn sweep_stale(root: &Path) {
    let dead = |pid: &str| !Path::new("/proc").join(pid).exists();
    if let Ok(out) = Command::new("nft").args(["list", "tables"]).output() {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(pid) = line.trim().strip_prefix(&format!("table inet {PREFIX}")) {
                if dead(pid) {
                    let _ = nft(&["delete", "table", "inet", &format!("{PREFIX}{pid}")]);
                }
            }
        }
    }
    super::delay::sweep_stale(dead);
    if let Ok(entries) = std::fs::read_dir(root) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name
                .strip_prefix("atrium-lt-")
                .and_then(|r| r.split('-').next())
            {
                if dead(pid) {
                    remove_group(&e.path());
                }
            }
        }
    }
}

/// The ports of a URL's hosts (`scheme://[user@]host:port[,host:port...][/...][?...]`).
pub(super) fn ports(url: &str) -> Vec<u16> {
    let url = url.split('?').next().unwrap_or("");
    url.split(',')
        .filter_map(|host| {
            let host = host.split_once("://").map_or(host, |(_, h)| h);
            let host = host.split('/').next().unwrap_or("");
            let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
            host.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
        })
        .collect()
}

/// `tcp dport { a, b }` (or `sport`) for nft.
pub(super) fn port_set(dir: &str, ports: &[u16]) -> String {
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    format!("tcp {dir} {{ {} }}", list.join(", "))
}

/// `lossy-store`: how long each packet to Postgres waits.
const STORE_DELAY: std::time::Duration = std::time::Duration::from_millis(200);

impl super::Cluster {
    fn links_mut(&mut self) -> Result<&mut Links> {
        self.links
            .as_mut()
            .context("the run was not started for link faults")
    }

    /// Cuts `victim` (a node id) as `kind` says; returns what was cut, for the report.
    pub fn cut_links(&mut self, kind: crate::options::FaultKind, victim: &str) -> Result<String> {
        use crate::options::FaultKind as K;
        let node = self
            .nodes
            .iter()
            .find(|n| n.id == victim)
            .with_context(|| format!("no node {victim}"))?;
        let admin = node
            .env
            .iter()
            .find(|(k, _)| k == "ATRIUM_ADMIN_BIND")
            .and_then(|(_, a)| a.rsplit_once(':')?.1.parse::<u16>().ok());
        let mut node_ports = vec![node.port];
        node_ports.extend(admin);
        let store = ports(&self.database_url);
        let coordinator = ports(&self.coordinator);
        let links = self.links_mut()?;
        Ok(match kind {
            K::Partition => {
                links.drop_from(victim, "")?;
                links.drop_all(&port_set("dport", &node_ports))?;
                format!("{victim} cut from everything (all it sends, all sent to its ports)")
            }
            K::CutCoordinator => {
                links.drop_from(victim, &port_set("dport", &coordinator))?;
                format!(
                    "{victim} cut from the coordinator (ports {coordinator:?}), not from Postgres"
                )
            }
            K::CutStore => {
                links.drop_from(victim, &port_set("dport", &store))?;
                format!("{victim} cut from Postgres (ports {store:?}), not from the coordinator")
            }
            K::CutRouter => {
                links.drop_from("router", &port_set("dport", &node_ports))?;
                format!("the router cut from {victim} (ports {node_ports:?}), which still reaches the coordinator and Postgres")
            }
            K::LossyStore => {
                let loss = "numgen random mod 100 < 5";
                links.drop_all(&format!("{} {loss}", port_set("dport", &store)))?;
                links.drop_all(&format!("{} {loss}", port_set("sport", &store)))?;
                links.delay_to(&store, STORE_DELAY)?;
                format!(
                    "5% of packets to and from Postgres (ports {store:?}) dropped, every packet \
                     to it delayed {} ms",
                    STORE_DELAY.as_millis()
                )
            }
            other => bail!("--fault {} is not a link fault", other.name()),
        })
    }

    /// Every link whole again.
    pub fn heal_links(&mut self) -> Result<()> {
        self.links_mut()?.heal()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_from_every_host_of_a_url() {
        assert_eq!(ports("postgres://atrium@127.0.0.1:5432/db"), [5432]);
        assert_eq!(
            ports(
                "postgres://u:p@127.0.0.1:5432,127.0.0.1:5433/db?target_session_attrs=read-write"
            ),
            [5432, 5433]
        );
        assert_eq!(
            ports("nats://127.0.0.1:4222,nats://127.0.0.1:4223?namespace=x&replicas=3"),
            [4222, 4223]
        );
        assert_eq!(ports("redis://127.0.0.1:6379/0?namespace=lt"), [6379]);
    }

    #[test]
    fn port_sets_are_nft_sets() {
        assert_eq!(port_set("dport", &[1, 2]), "tcp dport { 1, 2 }");
    }
}
