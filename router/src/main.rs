//! `atrium-router`: parses its settings and runs the router.

#![forbid(unsafe_code)]

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let config = atrium_router::RouterConfig::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&config.log)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    atrium_router::run(config, Box::new(atrium_router::Signals))
}
