//! The NATS backend's background work: the watched view of live members (always running),
//! and the lease and message subscriptions (from the first `watch`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use async_nats::jetstream::kv::{self, Entry, Operation};
use futures_util::StreamExt;
use tokio::sync::{oneshot, watch};
use tokio::time::{Instant, MissedTickBehavior};

use crate::events::Hub;
use crate::keys::decode;
use crate::record::{unavailable, LeaseRecord, MemberRecord};
use crate::{CoordinatorError, CoordinatorEvent, CoordinatorSettings, Member, NodeId};

/// The header carrying a fleet message's topic.
pub(crate) const TOPIC_HEADER: &str = "Atrium-Topic";

/// The live members as this instance has seen them in the members bucket.
pub(crate) struct View {
    live: Mutex<HashMap<NodeId, Seen>>,
    synced: watch::Sender<bool>,
}

struct Seen {
    member: Member,
    inc: String,
    at: Instant,
}

impl View {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            live: Mutex::default(),
            synced: watch::Sender::new(false),
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<NodeId, Seen>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a membership write (ours or one the watch delivered).
    pub fn seen(&self, record: &MemberRecord) {
        if let Some(member) = record.member() {
            let seen = Seen {
                member,
                inc: record.inc.clone(),
                at: Instant::now(),
            };
            self.live().insert(seen.member.id.clone(), seen);
        }
    }

    /// Drops a member; `true` if it was there.
    pub fn forget(&self, node: &NodeId) -> bool {
        self.live().remove(node).is_some()
    }

    pub fn members(&self) -> Vec<Member> {
        self.live().values().map(|s| s.member.clone()).collect()
    }

    pub fn incarnation(&self, node: &NodeId) -> Option<String> {
        self.live().get(node).map(|s| s.inc.clone())
    }

    /// Whether `node` (as stored in a counter) is live with incarnation `inc`.
    pub fn is_live(&self, node: &str, inc: &str) -> bool {
        NodeId::parse(node)
            .ok()
            .and_then(|n| self.live().get(&n).map(|s| s.inc == inc))
            .unwrap_or(false)
    }

    pub fn announce(&self, hub: &Hub, refresh: Option<Duration>) {
        if *self.synced.borrow() {
            hub.members_from(|| self.members(), refresh);
        }
    }

    fn mark_synced(&self) {
        self.synced
            .send_if_modified(|s| !std::mem::replace(s, true));
    }

    /// Waits until the first listing of the bucket has arrived.
    pub async fn wait_synced(&self, at_most: Duration) -> Result<(), CoordinatorError> {
        let mut rx = self.synced.subscribe();
        let synced = tokio::time::timeout(at_most, rx.wait_for(|s| *s))
            .await
            .is_ok_and(|r| r.is_ok());
        match synced {
            true => Ok(()),
            false => Err(CoordinatorError::Unavailable(
                "membership not listed yet".into(),
            )),
        }
    }

    /// Drops members with no write seen for `limit` (a marker missed); `true` if any went.
    fn expire(&self, limit: Duration) -> bool {
        let now = Instant::now();
        let mut live = self.live();
        let before = live.len();
        live.retain(|_, s| now.duration_since(s.at) < limit);
        live.len() != before
    }

    fn apply(&self, entry: &Entry) -> bool {
        let Some(node) = decode(&entry.key).and_then(|k| NodeId::parse(&k).ok()) else {
            return false;
        };
        match entry.operation {
            Operation::Put => match MemberRecord::parse(&entry.value) {
                Some(record) => {
                    self.seen(&record);
                    true
                }
                None => false,
            },
            Operation::Delete | Operation::Purge => self.forget(&node),
        }
    }
}

/// Follows the members bucket for as long as the coordinator lives: the last record of each
/// key first, then every write and lapse marker.
pub(crate) fn spawn_members(
    store: kv::Store,
    view: Arc<View>,
    hub: Arc<Hub>,
    settings: CoordinatorSettings,
    mut stop: oneshot::Receiver<()>,
) {
    tokio::spawn(async move {
        let started = Instant::now();
        let mut ticks = tokio::time::interval(settings.heartbeat);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let mut watch = match store.watch_with_history(">").await {
                Ok(w) => w,
                Err(_) => {
                    tokio::select! {
                        _ = &mut stop => return,
                        _ = tokio::time::sleep(settings.heartbeat) => continue,
                    }
                }
            };
            // An empty bucket delivers nothing to tell us the listing is complete.
            let mut stream = store.stream.clone();
            if stream.info().await.is_ok_and(|i| i.state.messages == 0) {
                view.mark_synced();
            }
            loop {
                tokio::select! {
                    _ = &mut stop => return,
                    entry = watch.next() => match entry {
                        Some(Ok(entry)) => {
                            let changed = view.apply(&entry);
                            if entry.delta == 0 {
                                view.mark_synced();
                            }
                            if changed {
                                view.announce(&hub, None);
                            }
                        }
                        Some(Err(_)) => continue,
                        // The consumer is gone: start over with a fresh listing.
                        None => break,
                    },
                    _ = ticks.tick() => {
                        if started.elapsed() >= settings.lease {
                            view.mark_synced();
                        }
                        view.expire(settings.lease + settings.lease / 2);
                        view.announce(&hub, Some(settings.lease));
                    }
                }
            }
        }
    });
}

/// Starts following lease hand-overs and fleet messages; returns once both subscriptions
/// are in place at the server, so events after `watch` returns are seen.
pub(crate) async fn spawn_leases_and_messages(
    leases: &kv::Store,
    client: &async_nats::Client,
    ns: &str,
    hub: &Arc<Hub>,
) -> Result<(), CoordinatorError> {
    let mut leases = leases
        .watch_all()
        .await
        .map_err(|e| unavailable("nats watch leases", e))?;
    let mut messages = client
        .subscribe(format!("{ns}.msg"))
        .await
        .map_err(|e| unavailable("nats subscribe", e))?;
    client
        .flush()
        .await
        .map_err(|e| unavailable("nats subscribe", e))?;
    let hub: Weak<Hub> = Arc::downgrade(hub);
    tokio::spawn(async move {
        // Holders as last announced, so renewals (a write each) are not announced.
        let mut holders: HashMap<String, String> = HashMap::new();
        loop {
            let event = tokio::select! {
                entry = leases.next() => match entry {
                    Some(Ok(entry)) => lease_event(&mut holders, &entry),
                    Some(Err(_)) => None,
                    None => return,
                },
                msg = messages.next() => match msg {
                    Some(msg) => message_event(msg),
                    None => return,
                },
            };
            let Some(hub) = hub.upgrade() else { return };
            if let Some(event) = event {
                hub.send(event);
            }
        }
    });
    Ok(())
}

fn lease_event(holders: &mut HashMap<String, String>, entry: &Entry) -> Option<CoordinatorEvent> {
    let file = decode(&entry.key)?;
    let holder = match entry.operation {
        Operation::Put => {
            let record: LeaseRecord = serde_json::from_slice(&entry.value).ok()?;
            if holders.get(&file) == Some(&record.node) {
                return None;
            }
            holders.insert(file.clone(), record.node.clone());
            Some(NodeId::parse(&record.node).ok()?)
        }
        Operation::Delete | Operation::Purge => {
            holders.remove(&file);
            None
        }
    };
    Some(CoordinatorEvent::LeaseChanged { file, holder })
}

fn message_event(msg: async_nats::Message) -> Option<CoordinatorEvent> {
    let topic = msg.headers.as_ref()?.get(TOPIC_HEADER)?.as_str();
    Some(CoordinatorEvent::Message {
        topic: decode(topic)?,
        payload: msg.payload.to_vec(),
    })
}
