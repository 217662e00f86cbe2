//! Room reports: `r.{node}` in the state bucket holds a node's latest report and its
//! incarnation; a reader takes those of live members only, so a dead node's report stops
//! counting with its membership (and is overwritten when the node comes back).

use super::{stored, Inner};
use crate::keys::encode;
use crate::record::unavailable;
use crate::{check_report, CoordinatorError, NodeId, Result};

fn report_key(node: &NodeId) -> String {
    format!("r.{}", encode(node.as_str()))
}

impl Inner {
    pub(super) async fn report_rooms(&self, node: &NodeId, report: Vec<u8>) -> Result<()> {
        check_report(&report)?;
        self.view.wait_synced(self.settings.lease * 2).await?;
        let inc = self.view.incarnation(node).ok_or(CoordinatorError::Lost)?;
        // The incarnation, a newline, then the report.
        let mut value = inc.into_bytes();
        value.push(b'\n');
        value.extend_from_slice(&report);
        self.state
            .put(report_key(node), value.into())
            .await
            .map_err(|e| unavailable("nats report rooms", e))?;
        Ok(())
    }

    pub(super) async fn room_reports(&self) -> Result<Vec<(NodeId, Vec<u8>)>> {
        self.view.wait_synced(self.settings.lease * 2).await?;
        let mut out = Vec::new();
        // One read per live member: the fleet's size, never its files.
        for m in self.view.members() {
            let Some(entry) = stored(&self.state, &report_key(&m.id), "nats room reports").await?
            else {
                continue;
            };
            let value = entry.value.to_vec();
            let Some(cut) = value.iter().position(|b| *b == b'\n') else {
                continue;
            };
            let inc = String::from_utf8_lossy(&value[..cut]).into_owned();
            if self.view.is_live(m.id.as_str(), &inc) {
                out.push((m.id.clone(), value[cut + 1..].to_vec()));
            }
        }
        Ok(out)
    }
}
