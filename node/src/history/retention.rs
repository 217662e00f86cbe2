//! Thinning automatic versions with age: all of the last day, one an hour for a week, one a
//! day for 30 days (each a setting), none after; named versions are kept until deleted, and
//! the newest version always.

use std::collections::HashSet;

use super::{VersionAge, VersionKind};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// How long automatic versions are kept, and how densely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Every automatic version younger than this is kept.
    pub all_ms: i64,
    /// Up to this age, the newest of each hour is kept.
    pub hourly_ms: i64,
    /// Up to this age, the newest of each day is kept; older ones are dropped.
    pub daily_ms: i64,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            all_ms: DAY_MS,
            hourly_ms: 7 * DAY_MS,
            daily_ms: 30 * DAY_MS,
        }
    }
}

/// The ids of the versions the policy drops at `now` (Unix ms), oldest first.
pub fn thinned(versions: &[VersionAge], now: i64, policy: &Retention) -> Vec<u64> {
    let mut newest_first: Vec<&VersionAge> = versions.iter().collect();
    newest_first.sort_by_key(|v| std::cmp::Reverse(v.id));
    let mut buckets = HashSet::new();
    let mut dropped = Vec::new();
    for (i, v) in newest_first.into_iter().enumerate() {
        if i == 0 || v.kind == VersionKind::Named {
            continue;
        }
        let age = now.saturating_sub(v.created_at);
        let keep = if age <= policy.all_ms {
            true
        } else if age <= policy.hourly_ms {
            buckets.insert((HOUR_MS, v.created_at.div_euclid(HOUR_MS)))
        } else if age <= policy.daily_ms {
            buckets.insert((DAY_MS, v.created_at.div_euclid(DAY_MS)))
        } else {
            false
        };
        if !keep {
            dropped.push(v.id);
        }
    }
    dropped.reverse();
    dropped
}
