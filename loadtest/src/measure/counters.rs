//! The counters clients add to, and snapshots of them to take rates from.

use std::sync::atomic::AtomicU64;

use serde::Serialize;

/// Counters, all for the whole run.
#[derive(Default)]
pub struct Counters {
    pub patches_sent: AtomicU64,
    pub acks_received: AtomicU64,
    pub patches_received: AtomicU64,
    pub presence_sent: AtomicU64,
    pub presence_received: AtomicU64,
    pub messages_sent: AtomicU64,
    pub messages_received: AtomicU64,
    pub bytes_received: AtomicU64,
    pub sends_skipped: AtomicU64,
    /// Patches and presence entries that reached a client other than their sender.
    pub delivered_updates: AtomicU64,
    pub dropped_patches: AtomicU64,
    pub out_of_order: AtomicU64,
    pub connection_errors: AtomicU64,
    /// Joins whose connection was reset, or ended without a close frame, between the TCP
    /// connect and the welcome (a refused upgrade answers with a status and is not one).
    pub handshake_resets: AtomicU64,
    pub rate_limited: AtomicU64,
    pub rejected: AtomicU64,
    pub joined_as_viewer: AtomicU64,
    pub connected: AtomicU64,
    pub open: AtomicU64,
    pub unacked_patches: AtomicU64,
    /// Cluster mode: sockets that came back after the server closed them.
    pub reconnects: AtomicU64,
    /// Cluster mode: reconnection attempts that failed (each retried with backoff).
    pub reconnect_failures: AtomicU64,
    /// Cluster mode: first joins that failed with a close asking to come back, and were retried.
    pub join_retries: AtomicU64,
    /// Cluster mode: unconfirmed patches sent again after a reconnect.
    pub resent_patches: AtomicU64,
    /// `--routers N`: joins sent to the next router because the last one could not be
    /// reached.
    pub router_switches: AtomicU64,
    /// Cluster mode: when the latest reconnect got its welcome, µs since the origin.
    pub last_rejoin_us: AtomicU64,
}

/// A copy of the counters that matter for rates, at one instant.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Snapshot {
    pub patches_sent: u64,
    pub acks_received: u64,
    pub patches_received: u64,
    pub presence_sent: u64,
    pub presence_received: u64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub bytes_received: u64,
    pub sends_skipped: u64,
    pub delivered_updates: u64,
}

impl Snapshot {
    /// Per-second rates between two snapshots `secs` apart.
    pub fn rates(&self, later: &Snapshot, secs: f64) -> [f64; 10] {
        let r = |a: u64, b: u64| {
            if secs > 0.0 {
                b.saturating_sub(a) as f64 / secs
            } else {
                0.0
            }
        };
        [
            r(self.patches_sent, later.patches_sent),
            r(self.acks_received, later.acks_received),
            r(self.patches_received, later.patches_received),
            r(self.presence_sent, later.presence_sent),
            r(self.presence_received, later.presence_received),
            r(self.messages_sent, later.messages_sent),
            r(self.messages_received, later.messages_received),
            r(self.bytes_received, later.bytes_received),
            r(self.sends_skipped, later.sends_skipped),
            r(self.delivered_updates, later.delivered_updates),
        ]
    }
}

/// Builds a `$ty` whose count fields are read from the counters of the same names, plus any
/// other fields given as `name: value`.
macro_rules! from_counters {
    ($ty:ident, $counters:expr, [$($count:ident),+ $(,)?] $(, $field:ident: $value:expr)* $(,)?) => {{
        let c = &$counters;
        $ty {
            $($count: c.$count.load(std::sync::atomic::Ordering::Relaxed),)+
            $($field: $value,)*
        }
    }};
}
pub(crate) use from_counters;
