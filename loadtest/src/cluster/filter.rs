//! The kernel's packet filters as the link faults drive them: one command at a time.

use std::process::Command;

use anyhow::{bail, Context, Result};

/// Runs a packet-filter command (`nft`, `iptables`); its stderr becomes the error.
pub(super) fn run(tool: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(tool)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {tool}"))?;
    if !out.status.success() {
        bail!(
            "{tool} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
