//! `atrium-node`: parses settings, starts the node, stops it on SIGTERM or SIGINT.

use anyhow::Context;
use clap::Parser;
use tokio::signal::unix::{signal, SignalKind};

use atrium_node::NodeConfig;

/// Chosen by measurement: see `atrium_node::allocator`.
#[global_allocator]
static ALLOCATOR: atrium_node::allocator::Allocator = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    atrium_node::allocator::init();
    let config = NodeConfig::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&config.log)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .on_thread_start(atrium_node::priority::relay_thread)
        .on_thread_park(atrium_node::allocator::on_idle)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        };
        let data = config.data.clone();
        let node_id = config.node_id.clone();
        let running = atrium_node::start(config, shutdown).await?;
        println!("atrium-node {node_id} listening on http://{}", running.addr);
        if let Some(admin) = running.admin_addr {
            println!("metrics on http://{admin}/metrics");
        }
        println!("data in {}", data.display());
        tracing::info!(addr = %running.addr, "listening");
        running.wait().await;
        Ok(())
    })
}
