//! Leases: `{ns}:l:{file}` holds `"node epoch incarnation"`, `{ns}:e:{file}` the file's epoch
//! counter; the scripts judge the holder's liveness by its membership record.

use std::time::Instant;

use super::Inner;
use crate::types::check_key;
use crate::{CoordinatorError, Lease, NodeId, Result, LEASE_RECORD_LIFETIME};

/// What the scripts compare a lease record against: ours while node and epoch match.
fn lease_value(lease: &Lease) -> String {
    format!("{} {}", lease.node, lease.epoch)
}

impl Inner {
    fn lease(&self, file: &str, node: &NodeId, epoch: u64) -> Lease {
        Lease::new(file, node, epoch, Instant::now() + self.settings.lease)
    }

    pub(super) async fn acquire(&self, file: &str, node: &NodeId) -> Result<Lease> {
        check_key("file id", file)?;
        let mut conn = self.conn().await?;
        let (ok, value): (i64, String) = self
            .scripts
            .acquire
            .key(self.key("l", file))
            .key(self.key("e", file))
            .arg(node.as_str())
            .arg(LEASE_RECORD_LIFETIME.as_millis() as u64)
            .arg(self.channel("leases"))
            .arg(file)
            .arg(self.member_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis acquire", e))?;
        if ok == -1 {
            return Err(CoordinatorError::Lost);
        }
        if ok == 0 {
            return Err(CoordinatorError::Held {
                holder: NodeId::parse(&value)?,
            });
        }
        let epoch = value
            .parse()
            .map_err(|_| CoordinatorError::Unavailable(format!("bad epoch {value:?}")))?;
        Ok(self.lease(file, node, epoch))
    }

    pub(super) async fn renew(&self, lease: &Lease) -> Result<Lease> {
        let mut conn = self.conn().await?;
        let ours: i64 = self
            .scripts
            .renew
            .key(self.key("l", &lease.file))
            .arg(lease_value(lease))
            .arg(LEASE_RECORD_LIFETIME.as_millis() as u64)
            .arg(self.member_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis renew", e))?;
        if ours != 1 {
            return Err(CoordinatorError::Lost);
        }
        Ok(self.lease(&lease.file, &lease.node, lease.epoch))
    }

    pub(super) async fn release(&self, lease: &Lease) -> Result<()> {
        let mut conn = self.conn().await?;
        self.scripts
            .release
            .key(self.key("l", &lease.file))
            .arg(lease_value(lease))
            .arg(self.channel("leases"))
            .arg(&lease.file)
            .invoke_async::<i64>(&mut conn)
            .await
            .map_err(|e| self.failed("redis release", e))?;
        Ok(())
    }

    pub(super) async fn holder(&self, file: &str) -> Result<Option<NodeId>> {
        let mut conn = self.conn().await?;
        let holder: Option<String> = self
            .scripts
            .holder
            .key(self.key("l", file))
            .arg(self.member_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis holder", e))?;
        Ok(holder.and_then(|node| NodeId::parse(&node).ok()))
    }
}
