//! Fleet-wide counters: `{ns}:c:{counter}` is a hash of `"node incarnation"` → slots, and one
//! script (`count.lua`) takes, gives back and sums them over live incarnations.

use super::Inner;
use crate::types::check_key;
use crate::{CoordinatorError, NodeId, Result};

impl Inner {
    pub(super) async fn count_up(&self, counter: &str, node: &NodeId, limit: u64) -> Result<bool> {
        check_key("counter", counter)?;
        match self.run_count(counter, "up", node.as_str(), limit).await? {
            -1 => Err(CoordinatorError::Lost),
            n => Ok(n == 1),
        }
    }

    pub(super) async fn count_down(&self, counter: &str, node: &NodeId) -> Result<()> {
        self.run_count(counter, "down", node.as_str(), 0).await?;
        Ok(())
    }

    pub(super) async fn count(&self, counter: &str) -> Result<u64> {
        let n = self.run_count(counter, "count", "", 0).await?;
        Ok(n.max(0) as u64)
    }

    /// Runs the counter script in `mode` (`up`, `down` or `count`).
    async fn run_count(&self, counter: &str, mode: &str, node: &str, limit: u64) -> Result<i64> {
        let mut conn = self.conn().await?;
        self.scripts
            .count
            .key(self.key("c", counter))
            .arg(self.member_prefix())
            .arg(mode)
            .arg(node)
            .arg(limit)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis count", e))
    }
}
