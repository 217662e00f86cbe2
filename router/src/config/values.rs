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
    ///
    /// Nor more than three quarters of the memory the router may use at
    /// [`MEMORY_A_CONNECTION`] each: the router's bounds are counts, and at a container's
    /// usual open-file limit (1,048,576) the descriptors alone would allow 262,080
    /// connections, 12 GiB of sockets in a pod of 512 MiB.
    pub fn max_connections(&self) -> usize {
        self.max_connections.unwrap_or_else(|| {
            let files = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .map(|(soft, _)| soft)
                .unwrap_or(1024);
            default_max_connections(
                usize::try_from(files).unwrap_or(usize::MAX),
                atrium_protocol::host::memory_limit_bytes(),
            )
        })
    }

    /// `ATRIUM_ROUTER_CONNECTIONS_PER_IP`; `None` when it is 0 (no cap).
    pub fn per_address(&self) -> Option<usize> {
        (self.connections_per_ip > 0).then_some(self.connections_per_ip)
    }
}

/// Descriptors a socket holds while it is tunnelled (see [`ConnectionSettings::max_connections`]).
const DESCRIPTORS_A_SOCKET: usize = 4;

/// What the router keeps for one connection, at most, in the default cap's sums: an idle
/// socket measured 48 KiB (release; `cluster::costs::idle_sockets_cost_the_router_little`),
/// and a request in flight holds its head and a body chunk besides.
const MEMORY_A_CONNECTION: u64 = 64 * 1024;

/// The connection cap for an open-file limit of `files` and `memory` bytes to use: every
/// connection a socket, with 256 descriptors to spare (listeners, the coordinator, logs),
/// and a quarter of the memory left for the rest of the router.
fn default_max_connections(files: usize, memory: u64) -> usize {
    let by_files = files.saturating_sub(256) / DESCRIPTORS_A_SOCKET;
    let by_memory = usize::try_from(memory / 4 * 3 / MEMORY_A_CONNECTION).unwrap_or(usize::MAX);
    by_files.min(by_memory).max(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At the default cap, every connection a socket still leaves the reserve: the review's
    /// router with 1,200 open files (cap 472 at half) ran out at 292 sockets and then accepted
    /// and refused no one.
    #[test]
    fn the_default_cap_leaves_descriptors_for_every_connection_as_a_socket() {
        let plenty = 1 << 40;
        for files in [1_024, 1_200, 20_000, 1_048_576] {
            let cap = default_max_connections(files, plenty);
            assert!(cap * DESCRIPTORS_A_SOCKET + 256 <= files, "{files}: {cap}");
        }
        assert_eq!(default_max_connections(1_200, plenty), 236);
        assert_eq!(default_max_connections(300, plenty), 64);
    }

    /// A pod of 512 MiB with a container's open-file limit: the descriptors would allow
    /// 262,080 connections (12 GiB at 48 KiB each); its memory allows 6,144.
    #[test]
    fn the_default_cap_fits_the_memory_the_router_may_use() {
        let (files, pod) = (1_048_576, 512 << 20);
        assert_eq!(default_max_connections(files, pod), 6_144);
        assert!(6_144 * 48 * 1024 < pod);
        // On this VM's 24 GiB the descriptors decide.
        assert_eq!(default_max_connections(files, 24 << 30), 262_080);
        // However little memory, a router takes some connections.
        assert_eq!(default_max_connections(files, 1 << 20), 64);
    }
}
