//! `--fault clock-jump`: a node's clocks moved forward while it runs. Every node of the run
//! starts with libfaketime preloaded and reading its offset from a file of its own (checked
//! every second); the fault writes `+60s` into the chosen node's file. Its wall clock and its
//! monotonic clock (Rust's `Instant`, tokio's timers) jump a minute ahead together, as after a
//! suspended VM or a step of NTP, while the other nodes and the services keep real time.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::Cluster;
use crate::options::Options;

/// Where Debian's libfaketime (`apt-get install libfaketime`) keeps its thread-safe library.
const CANDIDATES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/faketime/libfaketimeMT.so.1",
];

/// How far the clock jumps.
pub const JUMP: &str = "+60s";

fn library() -> Option<&'static str> {
    CANDIDATES
        .iter()
        .copied()
        .find(|p| std::path::Path::new(p).is_file())
}

/// The node's offset file: one per run (the tool's process id) and node.
fn offset_file(id: &str) -> PathBuf {
    std::env::temp_dir().join(format!("atrium-loadtest-clock-{}-{id}", std::process::id()))
}

/// What a node of a clock-jump run starts with: its offset file at `+0`, read every second.
pub(super) fn node_env(_o: &Options, id: &str) -> Vec<(&'static str, String)> {
    let file = offset_file(id);
    let _ = std::fs::write(&file, "+0\n");
    let Some(lib) = library() else {
        // start() refuses the run first (`check`); nothing to preload.
        return Vec::new();
    };
    vec![
        ("LD_PRELOAD", lib.to_owned()),
        (
            "FAKETIME_TIMESTAMP_FILE",
            file.to_string_lossy().into_owned(),
        ),
        ("FAKETIME_CACHE_DURATION", "1".to_owned()),
    ]
}

/// Refuses a clock-jump run on a machine without libfaketime, saying how to get it.
pub fn check() -> Result<()> {
    library().map(|_| ()).context(
        "--fault clock-jump preloads libfaketime into the nodes: install it \
         (`apt-get install libfaketime`; scripts/test.sh does)",
    )
}

impl Cluster {
    /// Moves node `id`'s clocks forward by [`JUMP`].
    pub fn jump_clock(&self, id: &str) -> Result<()> {
        std::fs::write(offset_file(id), format!("{JUMP}\n"))
            .with_context(|| format!("writing {id}'s clock offset"))
    }

    /// Removes the nodes' offset files.
    pub(super) fn remove_clock_files(&self) {
        for n in &self.nodes {
            let _ = std::fs::remove_file(offset_file(&n.id));
        }
    }
}
