//! Options for unit tests, as the command line gives them.

use clap::Parser;

use super::{merge, Cli, FileConfig, Options};

/// The command line `atrium-loadtest ARGS`, parsed.
pub fn cli(args: &[&str]) -> Cli {
    let mut all = vec!["atrium-loadtest"];
    all.extend_from_slice(args);
    Cli::try_parse_from(all).unwrap()
}

/// The options of a run on a spawned node, with `args` on the command line.
pub fn spawned(args: &[&str]) -> Options {
    let mut all = vec!["--spawn"];
    all.extend_from_slice(args);
    merge(cli(&all), FileConfig::default()).unwrap()
}
