//! The fixed label sets, every series of which a fresh node exports at zero.

use atrium_protocol::{CloseCode, CLIENT_MESSAGES, REJECT_CODES, SERVER_MESSAGES};
use prometheus::IntCounterVec;

use super::Metrics;

/// The `reason` label of `atrium_room_exits_total` (`room::Exit`).
pub const ROOM_EXIT_REASONS: &[&str] = &[
    "idle",
    "shutdown",
    "moved",
    "deleted",
    "lease-lost",
    "fenced",
];

/// The `operation` label of `atrium_coordinator_operations_total` (`counted.rs`).
pub const COORDINATOR_OPERATIONS: &[&str] = &[
    "join",
    "heartbeat",
    "leave",
    "members",
    "acquire",
    "renew",
    "release",
    "holder",
    "count",
    "count_up",
    "count_down",
    "publish",
    "watch",
    "report_rooms",
    "room_reports",
];

impl Metrics {
    /// Touches every series of the labelled families whose labels come from a fixed set,
    /// so a fresh node exports them at 0 and dashboards and alerts see 0, not "no data".
    pub(super) fn with_every_label_at_zero(self) -> Self {
        for code in CloseCode::ALL {
            self.closes.with_label_values(&[&code.to_string()]);
        }
        let families: [(&IntCounterVec, &[&str]); 9] = [
            (&self.joins, &["admitted", "deferred", "refused"]),
            (&self.rejects, REJECT_CODES),
            (&self.messages_received, CLIENT_MESSAGES),
            (&self.messages_sent, SERVER_MESSAGES),
            (&self.room_exits, ROOM_EXIT_REASONS),
            (&self.coordinator_operations, COORDINATOR_OPERATIONS),
            (&self.http_requests, &["1xx", "2xx", "3xx", "4xx", "5xx"]),
            (&self.server_patches, &["applied", "replayed", "refused"]),
            (&self.storage_refusals, crate::storage::REFUSED_WHAT),
        ];
        for (family, labels) in families {
            for label in labels {
                family.with_label_values(&[label]);
            }
        }
        self
    }
}
