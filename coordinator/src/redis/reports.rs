//! Room reports: `{ns}:r:{node}` holds a node's latest report. Readers take only those of
//! live members, so a dead node's report stops counting with its membership; the key itself
//! expires a minute after its last write (nodes report every few seconds), so nothing stays.

use redis::AsyncCommands;

use super::Inner;
use crate::{check_report, CoordinatorError, NodeId, Result};

/// How long a report key outlives its last write.
const REPORT_TTL_MS: u64 = 60_000;

impl Inner {
    pub(super) async fn report_rooms(&self, node: &NodeId, report: Vec<u8>) -> Result<()> {
        check_report(&report)?;
        let mut conn = self.conn().await?;
        let live: bool = conn
            .exists(format!("{}{}", self.member_prefix(), node.as_str()))
            .await
            .map_err(|e| self.failed("redis report rooms", e))?;
        if !live {
            return Err(CoordinatorError::Lost);
        }
        let ttl = (self.settings.lease.as_millis() as u64 * 2).max(REPORT_TTL_MS);
        let _: () = conn
            .pset_ex(self.key("r", node.as_str()), report, ttl)
            .await
            .map_err(|e| self.failed("redis report rooms", e))?;
        Ok(())
    }

    pub(super) async fn room_reports(&self) -> Result<Vec<(NodeId, Vec<u8>)>> {
        let members = self.members().await?;
        if members.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = members
            .iter()
            .map(|m| self.key("r", m.id.as_str()))
            .collect();
        let mut conn = self.conn().await?;
        let values: Vec<Option<Vec<u8>>> = redis::cmd("MGET")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis room reports", e))?;
        Ok(members
            .into_iter()
            .zip(values)
            .filter_map(|(m, v)| v.map(|v| (m.id, v)))
            .collect())
    }
}
