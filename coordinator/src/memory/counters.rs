//! Fleet-wide counters: counter -> node -> slots; a node's slots count while it is live.

use std::collections::HashMap;

use tokio::time::Instant;

use super::state::{is_live, State};
use super::Inner;
use crate::types::check_key;
use crate::{CoordinatorError, NodeId, Result};

impl Inner {
    pub(super) async fn count_up(&self, counter: &str, node: &NodeId, limit: u64) -> Result<bool> {
        check_key("counter", counter)?;
        let now = Instant::now();
        let mut st = self.lock();
        if !is_live(&st.members, node, now) {
            return Err(CoordinatorError::Lost);
        }
        if limit == 0 {
            return Ok(false);
        }
        if !st.counters.contains_key(counter) {
            st.sweep_counters(now);
            st.counters.insert(counter.to_owned(), HashMap::new());
        }
        let State {
            members, counters, ..
        } = &mut *st;
        let slots = counters
            .get_mut(counter)
            .expect("inserted above when missing");
        // O(nodes holding this counter): dead nodes' slots are dropped as we pass.
        slots.retain(|n, _| is_live(members, n, now));
        if slots.values().sum::<u64>() >= limit {
            return Ok(false);
        }
        *slots.entry(node.clone()).or_insert(0) += 1;
        Ok(true)
    }

    pub(super) async fn count_down(&self, counter: &str, node: &NodeId) -> Result<()> {
        let mut st = self.lock();
        if let Some(slots) = st.counters.get_mut(counter) {
            if let Some(n) = slots.get_mut(node) {
                *n -= 1;
                if *n == 0 {
                    slots.remove(node);
                }
            }
            if slots.is_empty() {
                st.counters.remove(counter);
            }
        }
        Ok(())
    }

    pub(super) async fn count(&self, counter: &str) -> Result<u64> {
        let now = Instant::now();
        let st = self.lock();
        Ok(st.counters.get(counter).map_or(0, |slots| {
            slots
                .iter()
                .filter(|(n, _)| is_live(&st.members, n, now))
                .map(|(_, k)| k)
                .sum()
        }))
    }
}
