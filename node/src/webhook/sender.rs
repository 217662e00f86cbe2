//! Delivery: each node sends the messages of the files it owns (it serves their room;
//! or nobody holds their lease and the ring names it), oldest first per (endpoint,
//! file) and one at a time per pair, so each endpoint sees a file's events in order.
//! A failed try is scheduled again with exponential backoff and jitter until
//! `ATRIUM_WEBHOOK_RETRY_FOR_MS` after the event, then the message is marked failed.
//! Requests run on tasks of their own, bounded in number (node-wide and per endpoint)
//! and in time, so a slow or dead endpoint holds up only its own messages.
//! Pairs take turns: of the due pairs, those sent least lately go first, so a file's
//! message waits for one turn of the other busy files, not behind their backlogs.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use atrium_coordinator::{CoordinatorEvent, NodeId, Ring};
use rand::Rng;
use tokio::sync::Semaphore;

use super::client::Client;
use crate::clock::unix_ms;
use crate::ids::FileId;
use crate::state::AppState;
use crate::store::{DueQuery, WebhookMessage};

/// How often the outbox is looked at without a wake-up.
const POLL: Duration = Duration::from_millis(250);
/// The least time between two looks (wake-ups come with every delivery).
const MIN_GAP: Duration = Duration::from_millis(20);
/// Upkeep: the outbox trimmed, its depth measured, endpoints looked up.
const UPKEEP: Duration = Duration::from_secs(2);
/// Messages read per look.
const DUE_LIMIT: i64 = 1_000;
/// Who owns a file not served here is asked at most this often, and for this many
/// files a look.
const OWNER_TTL: Duration = Duration::from_secs(1);
const OWNER_LOOKUPS: usize = 100;
/// Pairs whose last turn is remembered, at most (beyond, only the due ones are kept).
const TURNS_KEPT: usize = 4 * DUE_LIMIT as usize;

/// The (endpoint, file) pairs being sent, requests per endpoint, and the messages whose
/// try ended since the outbox was last read (a list read before their end still holds
/// them, as due: they must not be sent again from it).
#[derive(Default)]
struct InFlight {
    pairs: HashSet<(String, String)>,
    per_endpoint: HashMap<String, usize>,
    ended: HashSet<i64>,
}

struct Sender {
    state: Arc<AppState>,
    client: Client,
    permits: Arc<Semaphore>,
    in_flight: Arc<Mutex<InFlight>>,
    owners: HashMap<String, (bool, Instant)>,
    ring: Option<(Ring, Instant)>,
    turns: Turns,
}

/// When each (endpoint, file) pair was last sent, in turns counted by the node, so the
/// due pairs can be served least lately sent first.
#[derive(Default)]
struct Turns {
    last: HashMap<(String, String), u64>,
    count: u64,
}

impl Turns {
    /// Orders `due` (read oldest first) by each pair's last turn, never sent first; the
    /// read's order among equals.
    fn order(&mut self, due: &mut [WebhookMessage]) {
        due.sort_by_cached_key(|m| {
            self.last
                .get(&(m.endpoint.clone(), m.file.clone()))
                .copied()
                .unwrap_or(0)
        });
        if self.last.len() > TURNS_KEPT {
            let due: HashSet<(&str, &str)> = due
                .iter()
                .map(|m| (m.endpoint.as_str(), m.file.as_str()))
                .collect();
            self.last
                .retain(|(e, f), _| due.contains(&(e.as_str(), f.as_str())));
        }
    }

    /// The pair's message is being sent: its turn is now the latest.
    fn taken(&mut self, pair: &(String, String)) {
        self.count += 1;
        self.last.insert(pair.clone(), self.count);
    }
}

pub(super) async fn run(state: Arc<AppState>) {
    let config = state.config.clone();
    let mut sender = Sender {
        client: Client::new(
            config.webhook_block_private,
            Duration::from_millis(config.webhook_timeout_ms),
            // As many kept as may be in flight: to one endpoint, and in all.
            (
                config.webhook_per_endpoint.max(1),
                config.webhook_concurrency.max(1),
            ),
            state.metrics.webhooks.connections.clone(),
        ),
        permits: Arc::new(Semaphore::new(config.webhook_concurrency.max(1))),
        in_flight: Arc::default(),
        owners: HashMap::new(),
        ring: None,
        turns: Turns::default(),
        state,
    };
    let mut stopping = sender.state.stopping.clone();
    // Endpoint changes on any node of the fleet, through the coordinator.
    let mut changes = sender.state.coordinator.watch().await.ok();
    let mut upkeep = tokio::time::interval(UPKEEP);
    upkeep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = sender.state.webhooks.wake.notified() => {}
            _ = upkeep.tick() => sender.upkeep().await,
            changed = endpoints_changed(&mut changes) => {
                if changed {
                    sender.refresh_active().await;
                }
            }
            _ = stopping.changed() => return,
        }
        if *stopping.borrow() {
            return;
        }
        // Without an enabled endpoint nothing is due (a disabled one's messages wait).
        if sender.state.webhooks.active() {
            sender.look().await;
        }
        tokio::time::sleep(MIN_GAP).await;
    }
}

impl Sender {
    /// Whether any endpoint is enabled, read again from the store.
    async fn refresh_active(&self) {
        match self.state.store.webhooks().await {
            Ok(all) => self
                .state
                .webhooks
                .set_active(all.iter().any(|e| e.enabled)),
            Err(e) => tracing::debug!(error = %e, "webhook endpoints unreadable"),
        }
    }

    async fn upkeep(&mut self) {
        self.client.expire_idle();
        self.refresh_active().await;
        let store = &self.state.store;
        let metrics = &self.state.metrics.webhooks;
        let failed_before = unix_ms() - self.state.config.webhook_retry_for_ms as i64;
        match store
            .trim_webhooks(self.state.config.webhook_max_queued, failed_before)
            .await
        {
            Ok(t) => {
                if t.dropped > 0 {
                    metrics.dropped.inc_by(t.dropped);
                    tracing::warn!(
                        dropped = t.dropped,
                        "webhook messages dropped: an endpoint is over ATRIUM_WEBHOOK_MAX_QUEUED"
                    );
                }
            }
            Err(e) => tracing::debug!(error = %e, "webhook outbox not trimmed"),
        }
        if let Ok((waiting, failed)) = store.webhook_depth().await {
            metrics.waiting.set(waiting as i64);
            metrics.failed_kept.set(failed as i64);
        }
    }

    /// Reads what is due and starts what this node should send.
    async fn look(&mut self) {
        let config = self.state.config.clone();
        lock(&self.in_flight).ended.clear();
        let q = DueQuery {
            now: unix_ms(),
            debounce_ms: config.webhook_debounce_ms as i64,
            limit: DUE_LIMIT,
        };
        let mut due = match self.state.store.due_webhooks(q).await {
            Ok(due) => due,
            Err(e) => {
                tracing::debug!(error = %e, "webhook outbox unreadable");
                return;
            }
        };
        self.turns.order(&mut due);
        let mut lookups = 0;
        for msg in due {
            let pair = (msg.endpoint.clone(), msg.file.clone());
            if lock(&self.in_flight).pairs.contains(&pair) {
                continue;
            }
            if !self.owns(&msg.file, &mut lookups).await {
                continue;
            }
            let Ok(permit) = self.permits.clone().try_acquire_owned() else {
                break;
            };
            {
                // Checked and taken in one go: a try of this pair may have ended while
                // ownership was looked up, and this list was read before it ended.
                let mut flight = lock(&self.in_flight);
                let busy = flight.per_endpoint.get(&msg.endpoint).copied().unwrap_or(0);
                if flight.ended.contains(&msg.id)
                    || flight.pairs.contains(&pair)
                    || busy >= config.webhook_per_endpoint.max(1)
                {
                    continue;
                }
                *flight.per_endpoint.entry(msg.endpoint.clone()).or_default() += 1;
                self.turns.taken(&pair);
                flight.pairs.insert(pair);
            }
            let (state, client, in_flight) = (
                self.state.clone(),
                self.client.clone(),
                self.in_flight.clone(),
            );
            tokio::spawn(async move {
                deliver(&state, &client, &msg).await;
                let mut flight = lock(&in_flight);
                flight.ended.insert(msg.id);
                flight
                    .pairs
                    .remove(&(msg.endpoint.clone(), msg.file.clone()));
                if let Some(n) = flight.per_endpoint.get_mut(&msg.endpoint) {
                    *n -= 1;
                    if *n == 0 {
                        flight.per_endpoint.remove(&msg.endpoint);
                    }
                }
                drop(flight);
                drop(permit);
                state.webhooks.wake();
            });
        }
    }

    /// Whether this node sends the file's messages: it serves the file's room, or it
    /// holds the lease, or nobody does and the ring of live nodes names it.
    async fn owns(&mut self, file: &str, lookups: &mut usize) -> bool {
        let Some(id) = FileId::parse(file) else {
            return false;
        };
        if self.state.rooms.serving(&id) {
            return true;
        }
        if let Some((mine, at)) = self.owners.get(file) {
            if at.elapsed() < OWNER_TTL {
                return *mine;
            }
        }
        if *lookups >= OWNER_LOOKUPS {
            return false;
        }
        *lookups += 1;
        let me = self.state.node.clone();
        let mine = match self.state.coordinator.holder(file).await {
            Ok(Some(holder)) => holder == me,
            Ok(None) => self.ring_owner(file).await.is_some_and(|n| n == me),
            Err(_) => false,
        };
        if self.owners.len() > 10_000 {
            self.owners.retain(|_, (_, at)| at.elapsed() < OWNER_TTL);
        }
        self.owners.insert(file.to_owned(), (mine, Instant::now()));
        mine
    }

    async fn ring_owner(&mut self, file: &str) -> Option<NodeId> {
        let fresh = self
            .ring
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() < OWNER_TTL);
        if !fresh {
            let members = self.state.coordinator.members().await.ok()?;
            let live: Vec<NodeId> = members
                .into_iter()
                .filter(|m| !m.draining)
                .map(|m| m.id)
                .collect();
            self.ring = Some((Ring::new(live.iter()), Instant::now()));
        }
        self.ring.as_ref()?.0.owner(file)
    }
}

/// Waits for the next coordinator event: true when it says endpoints changed. Without a
/// watch (the coordinator refused it), never completes: the upkeep's refresh remains.
async fn endpoints_changed(
    changes: &mut Option<tokio::sync::broadcast::Receiver<CoordinatorEvent>>,
) -> bool {
    let Some(rx) = changes else {
        return std::future::pending().await;
    };
    match rx.recv().await {
        Ok(CoordinatorEvent::Message { topic, .. }) => topic == super::CHANGED,
        Ok(_) => false,
        // Missed some: refresh, to be safe.
        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
            *changes = None;
            false
        }
    }
}

/// One try of one message, and what its outcome means for the outbox.
async fn deliver(state: &AppState, client: &Client, msg: &WebhookMessage) {
    let metrics = &state.metrics.webhooks;
    let config = &state.config;
    let result = client.send(msg, unix_ms() / 1000).await;
    let now = unix_ms();
    let stored = match result {
        Ok(_) => {
            metrics.delivered.inc();
            metrics
                .delivery_seconds
                .observe((now - msg.created_at).max(0) as f64 / 1000.0);
            state
                .store
                .webhook_delivered(msg.id, msg.seq)
                .await
                .map(drop)
        }
        Err(e) if now - msg.created_at >= config.webhook_retry_for_ms as i64 => {
            metrics.failed.inc();
            tracing::warn!(endpoint = %msg.endpoint, msg = %msg.msg_id, error = %e,
                attempts = msg.attempts + 1, "webhook message failed for good");
            state.store.webhook_failed(msg.id).await
        }
        Err(e) => {
            metrics.retries.inc();
            let delay = backoff(
                msg.attempts,
                config.webhook_retry_base_ms,
                config.webhook_retry_max_ms,
            );
            if matches!(e, super::client::SendError::Internal(_)) {
                // A setting or an endpoint to fix, not a passing outage.
                tracing::warn!(endpoint = %msg.endpoint, msg = %msg.msg_id, error = %e,
                    retry_in_ms = delay, "webhook try refused");
            } else {
                tracing::debug!(endpoint = %msg.endpoint, msg = %msg.msg_id, error = %e,
                    retry_in_ms = delay, "webhook try failed");
            }
            state.store.webhook_retry(msg.id, now + delay as i64).await
        }
    };
    if let Err(e) = stored {
        // The message stays as it was and is tried again: at least once, maybe twice.
        tracing::warn!(msg = %msg.msg_id, error = %e, "webhook outcome not stored");
    }
}

/// The delay before try `attempts + 2`: `base × 2^attempts`, at most `max`, of which a
/// random half ("equal jitter"), so endpoints that failed together are not retried together.
pub(super) fn backoff(attempts: i64, base_ms: u64, max_ms: u64) -> u64 {
    let exp = attempts.clamp(0, 40) as u32;
    let full = base_ms
        .saturating_mul(1u64 << exp.min(40))
        .min(max_ms)
        .max(1);
    let half = full / 2;
    half + rand::rng().random_range(0..=full - half)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::backoff;

    #[test]
    fn backoff_doubles_with_jitter_up_to_its_cap() {
        for _ in 0..100 {
            let d0 = backoff(0, 1_000, 60_000);
            assert!((500..=1_000).contains(&d0), "{d0}");
            let d3 = backoff(3, 1_000, 60_000);
            assert!((4_000..=8_000).contains(&d3), "{d3}");
            let big = backoff(50, 1_000, 60_000);
            assert!((30_000..=60_000).contains(&big), "{big}");
        }
    }
}
