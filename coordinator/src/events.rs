//! Change notifications: what a watcher of the coordinator hears, and the hub every backend
//! feeds them through.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::{Instant, MissedTickBehavior};

use crate::{CoordinatorSettings, Member, NodeId};

/// How many events a slow watcher may fall behind before it sees `Lagged`.
const EVENT_BUFFER: usize = 4096;

/// One change seen by [`Coordinator::watch`](crate::Coordinator::watch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinatorEvent {
    /// The full live membership, sorted by id: sent when it changes (join, leave, draining
    /// flag, lapse) and again at least once per lease time, so a watcher that missed an event
    /// catches up within the lease time.
    MembersChanged(Vec<Member>),
    /// A file's lease changed hands, was released, or (where the backend sees it) lapsed.
    /// Renewals by the same holder are not announced.
    LeaseChanged {
        file: String,
        holder: Option<NodeId>,
    },
    /// A fleet-wide message from [`Coordinator::publish`](crate::Coordinator::publish); every
    /// watcher hears it, the publishing instance's own watchers included.
    Message { topic: String, payload: Vec<u8> },
}

/// A broadcast channel plus the last membership sent, so `MembersChanged` goes out only on
/// a change or when the periodic refresh is due.
pub(crate) struct Hub {
    tx: broadcast::Sender<CoordinatorEvent>,
    last: Mutex<(Option<Vec<Member>>, Instant)>,
}

impl Hub {
    pub(crate) fn new() -> Arc<Self> {
        let (tx, _) = broadcast::channel(EVENT_BUFFER);
        Arc::new(Self {
            tx,
            last: Mutex::new((None, Instant::now())),
        })
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<CoordinatorEvent> {
        self.tx.subscribe()
    }

    pub(crate) fn has_watchers(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    pub(crate) fn send(&self, event: CoordinatorEvent) {
        // No watcher is not an error: the event simply has nobody to tell.
        let _ = self.tx.send(event);
    }

    /// Announces the members `list` gives if they differ from the last set sent, or if
    /// `refresh` has passed since then. `list` runs under the hub's lock, so a listing never
    /// overtakes a newer one.
    pub(crate) fn members_from(
        &self,
        list: impl FnOnce() -> Vec<Member>,
        refresh: Option<Duration>,
    ) {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let mut members = list();
        members.sort_by(|a, b| a.id.cmp(&b.id));
        let now = Instant::now();
        let changed = last.0.as_ref() != Some(&members);
        let due = refresh.is_some_and(|every| now.duration_since(last.1) >= every);
        if changed || due {
            *last = (Some(members.clone()), now);
            self.send(CoordinatorEvent::MembersChanged(members));
        }
    }

    pub(crate) fn members(&self, members: Vec<Member>, refresh: Option<Duration>) {
        self.members_from(|| members, refresh);
    }
}

/// Calls `announce` every heartbeat interval (it lists the members and hands them to the
/// hub with a refresh of one lease time) until it answers `false` (its backend is gone).
pub(crate) fn spawn_members_ticker<F, Fut>(settings: CoordinatorSettings, mut announce: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = bool> + Send,
{
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(settings.heartbeat);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if !announce().await {
                return;
            }
        }
    });
}
