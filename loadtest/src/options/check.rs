//! The limits a run's options must keep, each refused with its reason.

use anyhow::{bail, Result};

use super::{Options, Target};
use crate::pin;

/// Whether the options make a run this tool can do.
pub fn check(o: &Options) -> Result<()> {
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
    finite("restore-every", o.restore_every, 0.0, 86_400.0)?;
    finite(
        "server-patches-per-s",
        o.server_patches_per_s,
        0.0,
        100_000.0,
    )?;
    if o.server_patches_per_s > 0.0 && matches!(o.target, Target::Url(_)) && o.api_key.is_none() {
        bail!("--server-patches-per-s against --url needs --api-key (an API key of the `server` scope)");
    }
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
        let Target::Cluster { nodes, routers, .. } = o.target else {
            bail!("--fault and --kill-node need --spawn-cluster N");
        };
        if f.kind.needs_two_routers() && routers < 2 {
            bail!(
                "--fault {} needs at least 2 routers (--routers 2 or more): one is broken while \
                 another serves",
                f.kind.name()
            );
        }
        // A node-level fault needs the rest of the fleet to serve the node's files.
        if f.kind.needs_two_nodes() && nodes < 2 {
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
    if o.pin_server.is_some() && matches!(o.target, Target::Url(_)) {
        bail!("--pin-server needs --spawn or --spawn-cluster: only servers this tool starts can be pinned");
    }
    if let Some(allowed) = pin::started_on() {
        for (option, cpus) in [
            ("--pin-server", &o.pin_server),
            ("--pin-generator", &o.pin_generator),
        ] {
            if let Some(cpus) = cpus {
                cpus.within(option, allowed)?;
            }
        }
    }
    if o.workers == 0 || o.workers > 1024 {
        bail!("--workers must be between 1 and 1024, got {}", o.workers);
    }
    Ok(())
}
