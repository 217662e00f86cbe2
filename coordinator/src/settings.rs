//! The coordinator's timing: lease, heartbeat and lease-record refresh, and their defaults.

use std::time::Duration;

use crate::types::Invalid;

/// Default lease: long enough that a GC-free Rust node never misses it under load, short
/// enough that a dead node's files are served again within the 5 s target.
pub const DEFAULT_LEASE: Duration = Duration::from_millis(DEFAULT_LEASE_MS);
const DEFAULT_LEASE_MS: u64 = 3_000;
/// Default heartbeat interval: a third of the lease, so two heartbeats in a row can fail
/// before the membership (and every lease hanging on it) lapses.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_millis(DEFAULT_LEASE_MS / 3);

/// How long a networked backend keeps a lease record after its last write. Whether a lease is
/// held is judged by its holder's membership, not by this: the lifetime only clears away the
/// records of holders that died and files nobody opened again, so it is long, and holders
/// rewrite their records every [`DEFAULT_LEASE_REFRESH`].
pub const LEASE_RECORD_LIFETIME: Duration = Duration::from_secs(6 * 3600);
/// Default interval between a holder's rewrites of its lease records ([`LeaseKeeper`]): a
/// sixth of their lifetime, so a few failed rewrites in a row cost nothing.
///
/// [`LeaseKeeper`]: crate::LeaseKeeper
pub const DEFAULT_LEASE_REFRESH: Duration = Duration::from_secs(3600);

// The defaults must satisfy the rule `validate` enforces on configured values.
const _: () = assert!(DEFAULT_LEASE.as_millis() > 2 * DEFAULT_HEARTBEAT.as_millis());

/// Timing shared by every backend and by [`LeaseKeeper`](crate::LeaseKeeper).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoordinatorSettings {
    /// How long a membership record (and so every lease hanging on it) lives without a
    /// heartbeat (`ATRIUM_LEASE_MS`).
    pub lease: Duration,
    /// How often a node heartbeats.
    pub heartbeat: Duration,
    /// How often a holder rewrites each lease record it holds, so the records of live
    /// holders never reach [`LEASE_RECORD_LIFETIME`].
    pub lease_refresh: Duration,
}

impl Default for CoordinatorSettings {
    fn default() -> Self {
        Self::from_lease(DEFAULT_LEASE)
    }
}

impl CoordinatorSettings {
    /// Settings for a given lease, heartbeating at a third of it (as the defaults do).
    pub fn from_lease(lease: Duration) -> Self {
        Self {
            lease,
            heartbeat: lease / 3,
            lease_refresh: DEFAULT_LEASE_REFRESH,
        }
    }

    /// The lease must outlast more than two heartbeat intervals, so one late or failed
    /// renewal never costs a healthy node its files.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.heartbeat.is_zero() {
            return Err(Invalid("heartbeat interval must be above zero".into()));
        }
        if self.lease <= self.heartbeat.saturating_mul(2) {
            return Err(Invalid(format!(
                "lease ({:?}) must be more than twice the heartbeat interval ({:?})",
                self.lease, self.heartbeat
            )));
        }
        if self.lease_refresh.is_zero() || self.lease_refresh > LEASE_RECORD_LIFETIME / 3 {
            return Err(Invalid(format!(
                "lease refresh ({:?}) must be above zero and at most a third of {:?}",
                self.lease_refresh, LEASE_RECORD_LIFETIME
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_consts() {
        let default = CoordinatorSettings::default();
        assert_eq!(default.lease, Duration::from_secs(3));
        assert!(default.lease > default.heartbeat * 2);
        default.validate().unwrap();
        CoordinatorSettings::from_lease(Duration::from_millis(3_000))
            .validate()
            .unwrap();

        let too_short = CoordinatorSettings {
            lease: Duration::from_secs(2),
            heartbeat: Duration::from_secs(1),
            ..default
        };
        assert!(too_short.validate().is_err());
        let zero = CoordinatorSettings {
            lease: Duration::from_secs(2),
            heartbeat: Duration::ZERO,
            ..default
        };
        assert!(zero.validate().is_err());
        for refresh in [Duration::ZERO, LEASE_RECORD_LIFETIME / 2] {
            let bad = CoordinatorSettings {
                lease_refresh: refresh,
                ..default
            };
            assert!(bad.validate().is_err(), "{refresh:?}");
        }
    }
}
