//! What the stores keep for webhooks: endpoints, and the outbox of messages to them.
//!
//! The outbox holds one row per (endpoint, event). A row is sent by the owner of its
//! file, rows of one (endpoint, file) strictly in the order of their events' times (then
//! ids), and deleted once delivered. Event time, not id: room events and `file.updated`
//! are written by two paths (the recorder, the journal), whose inserts may cross.
//! A `file.updated` row still waiting is updated in place by the next append of its file
//! (a new version, a new message id), which is how `file.updated` is debounced durably.

use super::StoreResult;
use crate::ids::FileId;

/// The event types an endpoint may ask for, in the order the docs list them.
pub const EVENT_TYPES: &[&str] = &[
    "file.updated",
    "version.created",
    "room.opened",
    "room.closed",
    "person.joined",
    "person.left",
];

/// The order an endpoint's messages are dropped in when it is over its bound (an SQL
/// `ORDER BY` over `webhook_outbox`): people's comings and goings first (a guest churning
/// through a public link makes the most of them, and they matter least once old), then
/// rooms' openings and closings, then file updates and versions; oldest first within each.
pub const DROP_ORDER: &str =
    "CASE WHEN kind LIKE 'person.%' THEN 0 WHEN kind LIKE 'room.%' THEN 1 ELSE 2 END, id";

/// The `file.updated` type, which the stores write inside the journal's commit.
pub const FILE_UPDATED: &str = "file.updated";

/// A webhook endpoint: where to send which events, signed with which secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEndpoint {
    pub id: String,
    pub url: String,
    /// `whsec_<base64>`; the key is the decoded base64 part.
    pub secret: String,
    /// The event types it receives (never empty).
    pub events: Vec<String>,
    /// A disabled endpoint is sent nothing and records nothing new; what waits stays.
    pub enabled: bool,
    pub description: String,
    pub created_at: i64,
}

impl WebhookEndpoint {
    /// The events as stored: `,a,b,` so that one `LIKE '%,type,%'` finds a type.
    pub(crate) fn events_column(&self) -> String {
        format!(",{},", self.events.join(","))
    }

    pub(crate) fn events_from_column(column: &str) -> Vec<String> {
        column
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// Changes to an endpoint; `None` leaves a field alone.
#[derive(Debug, Clone, Default)]
pub struct WebhookUpdate {
    pub url: Option<String>,
    pub secret: Option<String>,
    pub events: Option<Vec<String>>,
    pub enabled: Option<bool>,
    pub description: Option<String>,
}

impl WebhookUpdate {
    /// The endpoint with these changes made.
    pub(crate) fn apply_to(self, e: &mut WebhookEndpoint) {
        if let Some(url) = self.url {
            e.url = url;
        }
        if let Some(secret) = self.secret {
            e.secret = secret;
        }
        if let Some(events) = self.events {
            e.events = events;
        }
        if let Some(enabled) = self.enabled {
            e.enabled = enabled;
        }
        if let Some(description) = self.description {
            e.description = description;
        }
    }
}

/// An event to record for every enabled endpoint that wants its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookEvent {
    pub file: FileId,
    pub kind: &'static str,
    /// The message id (`webhook-id`), the same for every endpoint.
    pub msg_id: String,
    /// The JSON body, `{"type", "timestamp", "data"}`.
    pub body: String,
    /// When it happened (Unix ms).
    pub at: i64,
}

/// A message due to one endpoint, with what sending it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookMessage {
    /// The outbox row.
    pub id: i64,
    /// Bumped when a debounced row is updated: a delivery only deletes the row it sent.
    pub seq: i64,
    pub endpoint: String,
    pub url: String,
    pub secret: String,
    pub file: String,
    pub kind: String,
    pub msg_id: String,
    pub body: String,
    pub created_at: i64,
    /// Tries made so far.
    pub attempts: i64,
}

/// Which messages are due now.
#[derive(Debug, Clone, Copy)]
pub struct DueQuery {
    pub now: i64,
    /// A `file.updated` is due only this long after its first change.
    pub debounce_ms: i64,
    pub limit: i64,
}

/// What an outbox trim removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trimmed {
    /// Waiting messages dropped because their endpoint had too many.
    pub dropped: u64,
    /// Failed messages forgotten after their time.
    pub expired: u64,
}

/// The webhook half of the store: every [`Store`](super::Store) is one. `file.updated` is
/// not written through here but inside [`Store::append`](super::Store::append), in the
/// same transaction as the patches it reports.
#[async_trait::async_trait]
pub trait WebhookStore: Send + Sync + 'static {
    /// Stores a new endpoint unless `max` already exist ([`StoreError::Full`](super::StoreError::Full));
    /// `Conflict` when its id is taken.
    async fn create_webhook(&self, endpoint: &WebhookEndpoint, max: u64) -> StoreResult<()>;
    /// Stores an endpoint, replacing one with its id (the static endpoint of settings).
    async fn put_webhook(&self, endpoint: &WebhookEndpoint) -> StoreResult<()>;
    /// Every endpoint, oldest first.
    async fn webhooks(&self) -> StoreResult<Vec<WebhookEndpoint>>;
    async fn update_webhook(&self, id: &str, update: WebhookUpdate)
        -> StoreResult<WebhookEndpoint>;
    /// Deletes an endpoint and every message waiting for it.
    async fn delete_webhook(&self, id: &str) -> StoreResult<()>;
    /// Records events for every enabled endpoint that wants their types, in one
    /// transaction; answers how many messages that made.
    async fn record_webhooks(&self, events: &[WebhookEvent]) -> StoreResult<u64>;
    /// The messages due now: for each (endpoint, file), its earliest waiting message (by
    /// event time, then id) only, and only once due; the longest waiting first.
    async fn due_webhooks(&self, q: DueQuery) -> StoreResult<Vec<WebhookMessage>>;
    /// A message was delivered: deletes it unless it changed since it was read (a
    /// debounced `file.updated` with a newer version, still to send: its debounce then
    /// starts again from now). True if deleted.
    async fn webhook_delivered(&self, id: i64, seq: i64) -> StoreResult<bool>;
    /// A try failed: the next is due at `next_at`.
    async fn webhook_retry(&self, id: i64, next_at: i64) -> StoreResult<()>;
    /// The message is given up on: kept as failed until the trim forgets it.
    async fn webhook_failed(&self, id: i64) -> StoreResult<()>;
    /// Bounds the outbox: drops each endpoint's messages beyond `max_per_endpoint`, in
    /// [`DROP_ORDER`], and forgets failed messages made before `failed_before`.
    async fn trim_webhooks(
        &self,
        max_per_endpoint: u64,
        failed_before: i64,
    ) -> StoreResult<Trimmed>;
    /// (waiting, failed) messages in the outbox.
    async fn webhook_depth(&self) -> StoreResult<(u64, u64)>;
}
