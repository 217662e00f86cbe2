//! Fleet-wide counters: `c.{counter}` in the state bucket holds one counter's slots as
//! `{node: [incarnation, slots]}`, updated by compare-and-set, and summed over the nodes whose
//! live membership has that incarnation.

use std::collections::HashMap;

use async_nats::jetstream::kv::{Operation, UpdateErrorKind};

use super::{Inner, CAS_TRIES, MARKER_TTL};
use crate::keys::encode;
use crate::record::unavailable;
use crate::types::check_key;
use crate::{CoordinatorError, NodeId, Result};

/// node -> (incarnation, slots).
type Slots = HashMap<String, (String, u64)>;

fn counter_key(counter: &str) -> String {
    format!("c.{}", encode(counter))
}

impl Inner {
    pub(super) async fn count_up(&self, counter: &str, node: &NodeId, limit: u64) -> Result<bool> {
        check_key("counter", counter)?;
        self.view.wait_synced(self.settings.lease * 2).await?;
        let inc = self.view.incarnation(node).ok_or(CoordinatorError::Lost)?;
        if limit == 0 {
            return Ok(false);
        }
        let key = counter_key(counter);
        for _ in 0..CAS_TRIES {
            let (mut slots, rev) = self.slots(&key).await?;
            // Slots of lapsed incarnations stop counting and are dropped with this write.
            slots.retain(|n, (i, _)| self.view.is_live(n, i));
            if slots.values().map(|(_, n)| n).sum::<u64>() >= limit {
                return Ok(false);
            }
            let mine = slots
                .entry(node.as_str().to_owned())
                .or_insert((inc.clone(), 0));
            mine.1 += 1;
            if self.write_slots(&key, &slots, rev).await? {
                return Ok(true);
            }
        }
        Err(CoordinatorError::Unavailable("counter contended".into()))
    }

    pub(super) async fn count_down(&self, counter: &str, node: &NodeId) -> Result<()> {
        let key = counter_key(counter);
        for _ in 0..CAS_TRIES {
            let (mut slots, rev) = self.slots(&key).await?;
            match slots.get_mut(node.as_str()) {
                Some((_, n)) if *n > 1 => *n -= 1,
                Some(_) => {
                    slots.remove(node.as_str());
                }
                None => return Ok(()),
            }
            if self.write_slots(&key, &slots, rev).await? {
                return Ok(());
            }
        }
        Err(CoordinatorError::Unavailable("counter contended".into()))
    }

    pub(super) async fn count(&self, counter: &str) -> Result<u64> {
        self.view.wait_synced(self.settings.lease * 2).await?;
        let (slots, _) = self.slots(&counter_key(counter)).await?;
        Ok(slots
            .iter()
            .filter(|(n, (i, _))| self.view.is_live(n, i))
            .map(|(_, (_, k))| k)
            .sum())
    }

    /// The current slots of a counter and the revision to expect when writing them.
    async fn slots(&self, key: &str) -> Result<(Slots, u64)> {
        match self
            .state
            .entry(key)
            .await
            .map_err(|e| unavailable("nats counter", e))?
        {
            Some(e) if e.operation == Operation::Put => Ok((
                serde_json::from_slice(&e.value).unwrap_or_default(),
                e.revision,
            )),
            Some(e) => Ok((Slots::new(), e.revision)),
            None => Ok((Slots::new(), 0)),
        }
    }

    /// Writes a counter's slots expecting `rev`; `Ok(false)` when someone wrote first.
    async fn write_slots(&self, key: &str, slots: &Slots, rev: u64) -> Result<bool> {
        let result = if slots.is_empty() && rev != 0 {
            // An emptied counter leaves only a marker that expires, not a key per account.
            self.state
                .purge_expect_revision_with_ttl(key, rev, MARKER_TTL)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        } else {
            let json = serde_json::to_vec(slots).expect("slots serialize");
            match self.state.update(key, json.into(), rev).await {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => return Ok(false),
                Err(e) => Err(e.to_string()),
            }
        };
        match result {
            Ok(()) => Ok(true),
            // A purge reports a stale revision only through its message.
            Err(e) if e.contains("wrong last sequence") => Ok(false),
            Err(e) => Err(unavailable("nats counter", e)),
        }
    }
}
