//! atrium-loadtest: many live sockets against an Atrium node, measured.
//!
//! See docs/loadtest.md for every option and measure.

mod apptokens;
mod client;
mod cluster;
mod fault;
mod history;
mod html;
mod http;
mod measure;
mod node;
mod options;
mod pin;
mod profile;
mod report;
mod restores;
mod run;
mod schedule;
mod setup;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Before anything pins this process: what spawned processes get back unless pinned.
    pin::started_on();
    let cli = options::Cli::parse();
    let options = match options::load_file(&cli).and_then(|file| options::merge(cli, file)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("atrium-loadtest: {e:#}");
            return ExitCode::from(2);
        }
    };
    if options.profile.is_some() {
        if let Err(e) = profile::check(&profile::perf_binary()) {
            eprintln!("atrium-loadtest: {e:#}");
            return ExitCode::from(2);
        }
    }
    // Before the runtime starts, so every thread it starts inherits the pinning.
    if let Some(cpus) = &options.pin_generator {
        if let Err(e) = pin::pin_generator(cpus) {
            eprintln!("atrium-loadtest: {e:#}");
            return ExitCode::from(2);
        }
    }
    let nofile = node::raise_nofile();
    if (nofile as usize) < options.users + 256 {
        eprintln!(
            "atrium-loadtest: warning: the open-file limit is {nofile}, below --users + 256; \
             sockets beyond it will fail (raise ulimit -n)"
        );
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.workers)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("atrium-loadtest: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let (json, html) = (options.json.clone(), options.html.clone());
    let report = match runtime.block_on(run::run(options)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("\natrium-loadtest: {e:#}");
            return ExitCode::from(1);
        }
    };
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    print!("{}", report.text());
    let mut failed = false;
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).expect("report serializes");
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("atrium-loadtest: cannot write {}: {e}", path.display());
            failed = true;
        }
    }
    if let Some(path) = html {
        if let Err(e) = std::fs::write(&path, html::page(&report)) {
            eprintln!("atrium-loadtest: cannot write {}: {e}", path.display());
            failed = true;
        }
    }
    if let Some(e) = report.profile.as_ref().and_then(|p| p.error.as_ref()) {
        eprintln!("atrium-loadtest: --profile: {e}");
        failed = true;
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
