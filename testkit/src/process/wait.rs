//! Waiting on a spawned binary: for its exit, or for a line of its output.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use super::Proc;

impl Proc {
    /// Waits up to `within` for the process to exit on its own.
    pub async fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.try_exit() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (at most `within`) until the output contains `needle`; the rest of that
    /// line. Fails the test, with the output, if it never comes or the process exits.
    pub async fn wait_line(&mut self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        let line = |log: &str| {
            let i = log.find(needle)?;
            Some(
                log[i + needle.len()..]
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            )
        };
        loop {
            let log = self.log();
            if let Some(found) = line(&log) {
                return found;
            }
            if let Some(status) = self.try_exit() {
                // The reader threads may still hold the last lines.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let log = self.log();
                if let Some(found) = line(&log) {
                    return found;
                }
                panic!(
                    "{} exited ({status}) before printing {needle:?}:\n{log}",
                    self.name
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} did not print {needle:?} within {within:?}:\n{log}",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
