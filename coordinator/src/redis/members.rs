//! Membership: one script per call; the scripts publish each change on `{ns}:ev:members`.

use std::time::Duration;

use super::Inner;
use crate::record::{check_member, new_incarnation, MemberRecord};
use crate::{CoordinatorError, Member, NodeId, Result};

impl Inner {
    pub(super) async fn join(&self, member: Member) -> Result<()> {
        check_member(&member)?;
        let mut conn = self.conn().await?;
        let began: i64 = self
            .scripts
            .join
            .key(self.key("m", member.id.as_str()))
            .key(self.member_set())
            .arg(member.id.as_str())
            .arg(&member.address)
            .arg(u8::from(member.draining))
            .arg(self.settings.lease.as_millis() as u64)
            .arg(new_incarnation())
            .arg(self.channel("members"))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis join", e))?;
        if began == 1 {
            self.rejoins.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    pub(super) async fn heartbeat(&self, node: &NodeId, draining: bool) -> Result<()> {
        let mut conn = self.conn().await?;
        let alive: i64 = self
            .scripts
            .heartbeat
            .key(self.key("m", node.as_str()))
            .arg(u8::from(draining))
            .arg(self.settings.lease.as_millis() as u64)
            .arg(self.channel("members"))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis heartbeat", e))?;
        if alive == 1 {
            Ok(())
        } else {
            Err(CoordinatorError::Lost)
        }
    }

    pub(super) async fn leave(&self, node: &NodeId) -> Result<()> {
        let mut conn = self.conn().await?;
        self.scripts
            .leave
            .key(self.key("m", node.as_str()))
            .key(self.member_set())
            .arg(node.as_str())
            .arg(self.channel("members"))
            .invoke_async::<i64>(&mut conn)
            .await
            .map_err(|e| self.failed("redis leave", e))?;
        Ok(())
    }

    pub(super) async fn evict(&self, node: &NodeId, address: &str) -> Result<bool> {
        let mut conn = self.conn().await?;
        let ended: i64 = self
            .scripts
            .evict
            .key(self.key("m", node.as_str()))
            .key(self.member_set())
            .arg(node.as_str())
            .arg(address)
            .arg(self.channel("members"))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis evict", e))?;
        Ok(ended == 1)
    }

    pub(super) async fn members(&self) -> Result<Vec<Member>> {
        let mut conn = self.conn().await?;
        let records: Vec<Vec<u8>> = self
            .scripts
            .members
            .key(self.member_set())
            .arg(self.member_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.failed("redis members", e))?;
        Ok(records
            .iter()
            .filter_map(|r| MemberRecord::parse(r)?.member())
            .collect())
    }

    /// Lists the members and tells the hub, one listing at a time so an older listing is
    /// never announced after a newer one.
    pub(super) async fn announce_members(&self, refresh: Option<Duration>) {
        let _one = self.listing.lock().await;
        if let Ok(members) = self.members().await {
            self.hub.members(members, refresh);
        }
    }
}
