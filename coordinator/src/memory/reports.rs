//! Room reports: each node's latest, kept while it lives.

use tokio::time::Instant;

use super::state::is_live;
use super::Inner;
use crate::{check_report, CoordinatorError, NodeId, Result};

impl Inner {
    pub(super) async fn report_rooms(&self, node: &NodeId, report: Vec<u8>) -> Result<()> {
        check_report(&report)?;
        let mut st = self.lock();
        if !is_live(&st.members, node, Instant::now()) {
            return Err(CoordinatorError::Lost);
        }
        st.reports.insert(node.clone(), report);
        Ok(())
    }

    pub(super) async fn room_reports(&self) -> Result<Vec<(NodeId, Vec<u8>)>> {
        let now = Instant::now();
        let mut st = self.lock();
        let super::state::State {
            members, reports, ..
        } = &mut *st;
        // Reports of nodes that lapsed are dropped as we pass.
        reports.retain(|n, _| is_live(members, n, now));
        Ok(reports
            .iter()
            .map(|(n, r)| (n.clone(), r.clone()))
            .collect())
    }
}
