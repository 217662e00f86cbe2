//! The binaries a fleet runs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The binaries a fleet runs.
#[derive(Clone, Debug)]
pub struct Binaries {
    pub node: PathBuf,
    pub router: PathBuf,
}

/// The `atrium-node` binary for tests outside its crate: `ATRIUM_NODE_BIN`, else built
/// once per test run (`cargo build -p atrium-node`), else the one already built.
pub fn node_binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(bin) = std::env::var("ATRIUM_NODE_BIN") {
            return PathBuf::from(bin);
        }
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root");
        let target = std::env::var("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| workspace.join("target"));
        let bin = target.join("debug").join("atrium-node");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "atrium-node", "--bin", "atrium-node"])
            .current_dir(workspace)
            .status();
        match status {
            Ok(s) if s.success() => {}
            other if bin.exists() => {
                eprintln!(
                    "`cargo build -p atrium-node` failed ({other:?}); using the existing binary"
                )
            }
            other => panic!("cannot build atrium-node ({other:?}) and {bin:?} does not exist"),
        }
        bin
    })
    .clone()
}
