//! The webhooks' metrics (docs/webhooks.md, "Metrics").

use prometheus::{Histogram, IntCounter, IntGauge, Registry};

use super::{counter, gauge, histogram};

/// From an event to its delivery: debounce and retries included, so up to a day.
const DELIVERY: &[f64] = &[
    0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0, 21600.0, 86400.0,
];

pub struct WebhookMetrics {
    pub delivered: IntCounter,
    pub retries: IntCounter,
    pub failed: IntCounter,
    pub dropped: IntCounter,
    pub waiting: IntGauge,
    pub failed_kept: IntGauge,
    pub delivery_seconds: Histogram,
    pub connections: IntCounter,
}

impl WebhookMetrics {
    pub(super) fn register(r: &Registry) -> Self {
        Self {
            delivered: counter(
                r,
                "atrium_webhook_delivered_total",
                "Webhook messages delivered (answered 2xx) by this node.",
            ),
            retries: counter(
                r,
                "atrium_webhook_retries_total",
                "Webhook tries that failed and were scheduled again (a timeout, a refused \
                 connection, an answer other than 2xx).",
            ),
            failed: counter(
                r,
                "atrium_webhook_failed_total",
                "Webhook messages given up on after ATRIUM_WEBHOOK_RETRY_FOR_MS of tries.",
            ),
            dropped: counter(
                r,
                "atrium_webhook_dropped_total",
                "Webhook messages dropped unsent: an endpoint over ATRIUM_WEBHOOK_MAX_QUEUED \
                 (the oldest go), or room events over the node's recording backlog.",
            ),
            waiting: gauge(
                r,
                "atrium_webhook_outbox_messages",
                "Webhook messages waiting in the outbox, fleet-wide (read from the store; take \
                 the max over nodes, not the sum).",
            ),
            failed_kept: gauge(
                r,
                "atrium_webhook_failed_messages",
                "Failed webhook messages still kept in the outbox, fleet-wide (read from the store).",
            ),
            delivery_seconds: histogram(
                r,
                "atrium_webhook_delivery_seconds",
                "From a webhook event being recorded to its delivery (debounce and retries included).",
                DELIVERY,
            ),
            connections: counter(
                r,
                "atrium_webhook_connections_total",
                "Connections opened to webhook endpoints (each is kept open for the next \
                 messages to the same host while idle less than 30 s).",
            ),
        }
    }
}
