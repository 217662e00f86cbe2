//! What the settings stand for: durations, the proxy's timeouts, and the rules a value must
//! follow beyond its type.

use std::time::Duration;

use super::{ConnectionSettings, FleetSettings, RouterConfig, StopSettings, TimeoutSettings};
use crate::proxy::Timeouts;

impl RouterConfig {
    /// Checks the values that have rules beyond their type.
    pub fn validate(&self) -> Result<(), String> {
        if self.fleet.holders == 0 {
            return Err("ATRIUM_ROUTER_HOLDERS must be at least 1".into());
        }
        if self.threads == 0 {
            return Err("ATRIUM_ROUTER_THREADS must be at least 1".into());
        }
        self.timeouts.validate()?;
        self.stop.validate()?;
        atrium_coordinator::CoordinatorSettings::from_lease(self.fleet.lease())
            .validate()
            .map_err(|e| e.to_string())
    }
}

impl FleetSettings {
    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }
}

impl TimeoutSettings {
    fn validate(&self) -> Result<(), String> {
        if self.connect_timeout_ms == 0 || self.read_timeout_ms == 0 {
            return Err("router timeouts must be above zero".into());
        }
        Ok(())
    }

    /// The proxy's timeouts in a fleet with this lease time: a file's request waits for an
    /// unreachable node's membership to lapse for at most the lease time and a second.
    pub fn proxy(&self, lease: Duration) -> Timeouts {
        Timeouts {
            connect: Duration::from_millis(self.connect_timeout_ms),
            read: Duration::from_millis(self.read_timeout_ms),
            socket_write: Duration::from_millis(self.socket_write_timeout_ms),
            lapse: lease + Duration::from_secs(1),
        }
    }
}

impl StopSettings {
    pub fn drain(&self) -> Duration {
        Duration::from_millis(self.drain_ms)
    }

    pub fn shutdown(&self) -> Duration {
        Duration::from_millis(self.shutdown_ms)
    }

    fn validate(&self) -> Result<(), String> {
        if self.shutdown_ms < self.drain_ms {
            return Err(format!(
                "ATRIUM_ROUTER_SHUTDOWN_MS ({}) must be at least ATRIUM_ROUTER_DRAIN_MS ({})",
                self.shutdown_ms, self.drain_ms
            ));
        }
        Ok(())
    }
}

impl ConnectionSettings {
    /// `ATRIUM_ROUTER_MAX_CONNECTIONS`, or a quarter of the open-file limit less a reserve of
    /// 256, at least 64: a socket holds four descriptors (its connection and its node's, each
    /// twice while tunnelled: pingora's sessions keep theirs until the tunnel ends). At half,
    /// sockets at half the cap used every descriptor, and the router then accepted nothing,
    /// refusing no one (the fifteenth review).
    pub fn max_connections(&self) -> usize {
        self.max_connections.unwrap_or_else(|| {
            let files = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .map(|(soft, _)| soft)
                .unwrap_or(1024);
            default_max_connections(usize::try_from(files).unwrap_or(usize::MAX))
        })
    }

    /// `ATRIUM_ROUTER_CONNECTIONS_PER_IP`; `None` when it is 0 (no cap).
    pub fn per_address(&self) -> Option<usize> {
        (self.connections_per_ip > 0).then_some(self.connections_per_ip)
    }
}

/// Descriptors a socket holds while it is tunnelled (see [`ConnectionSettings::max_connections`]).
const DESCRIPTORS_A_SOCKET: usize = 4;

/// The connection cap for an open-file limit of `files`: every connection a socket, with 256
/// descriptors to spare (listeners, the coordinator, logs).
fn default_max_connections(files: usize) -> usize {
    (files.saturating_sub(256) / DESCRIPTORS_A_SOCKET).max(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At the default cap, every connection a socket still leaves the reserve: the review's
    /// router with 1,200 open files (cap 472 at half) ran out at 292 sockets and then accepted
    /// and refused no one.
    #[test]
    fn the_default_cap_leaves_descriptors_for_every_connection_as_a_socket() {
        for files in [1_024, 1_200, 20_000, 1_048_576] {
            let cap = default_max_connections(files);
            assert!(cap * DESCRIPTORS_A_SOCKET + 256 <= files, "{files}: {cap}");
        }
        assert_eq!(default_max_connections(1_200), 236);
        assert_eq!(default_max_connections(300), 64);
    }
}
