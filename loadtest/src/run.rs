//! One run: target, setup, ramp, warm-up, the measured window, the end (close or drop), and
//! the report. A sampler looks at the server and the counters every second throughout.

use std::io::Write;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::cluster::Cluster;
use crate::http::Endpoint;
use crate::node::{self, Sample, Spawned};
use crate::options::{Options, Target};
use crate::profile;
use crate::report::Report;

mod assemble;
mod clients;
mod drive;
mod failover;
mod measures;
mod sampler;
mod window;

#[cfg(test)]
mod tests;

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
            routers,
            server,
            router,
        } => {
            let fronts = match routers {
                1 => "a router".to_string(),
                n => format!("{n} routers"),
            };
            progress(&o, &format!("starting {nodes} nodes and {fronts}"));
            let c =
                Cluster::start(&o, *nodes, *routers, server.as_deref(), router.as_deref()).await?;
            let url = c.router_url();
            let behind = match c.routers.len() {
                1 => format!("the router at {url}"),
                n => {
                    let urls: Vec<&str> = c.routers.iter().map(|r| r.url.as_str()).collect();
                    format!("{n} routers at {}", urls.join(", "))
                }
            };
            cluster = Some(c);
            (
                url,
                format!("spawned cluster of {nodes} nodes behind {behind}"),
            )
        }
        Target::Spawn { server, port } => {
            let binary = node::find_binary(server.as_deref());
            let env = node::spawn_env(&o);
            let (port, cpus) = (*port, o.pin_server.clone());
            let s = tokio::task::spawn_blocking(move || {
                Spawned::start(&binary, port, &env, cpus.as_ref(), None)
            })
            .await??;
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

    let result = drive::drive(&o, &endpoint, pid, &mut spawned, &mut cluster, target).await;
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
