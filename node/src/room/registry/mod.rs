//! The rooms of this node, by file: opened on first use, gone when idle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use super::shares::Opener;
use super::{Room, RoomCmd, RoomContext};
use crate::ids::FileId;

mod asking;
mod inbound;
mod presences;

pub use inbound::{Inbound, Ticket, INBOUND_BYTES, SMALL_LANE_BYTES, SMALL_PATCH};
pub use presences::PresenceInbox;

#[derive(Clone)]
pub struct RoomHandle {
    pub tx: mpsc::UnboundedSender<RoomCmd>,
    generation: u64,
    /// People in the room, kept up to date by the room (for /health).
    pub people: Arc<AtomicUsize>,
    /// True from the room's load (lease taken, epoch raised) until it ends.
    pub serving: Arc<AtomicBool>,
    /// Patches handed to the room and not yet handled, in bytes.
    pub inbound: Arc<Inbound>,
    /// Presence waiting for the room's next tick.
    pub presences: Arc<PresenceInbox>,
}

pub type RoomMap = Arc<Mutex<HashMap<FileId, RoomHandle>>>;

/// Which room is opening: its file, its generation here, and who opens it (whose share of
/// memory it counts against).
pub struct Opening {
    pub file: FileId,
    pub generation: u64,
    pub opener: Opener,
}

/// Removes a room's entry, unless a newer room of the same file took its place.
pub fn remove(rooms: &RoomMap, file: &FileId, generation: u64) {
    let mut map = rooms.lock().unwrap_or_else(|p| p.into_inner());
    if map.get(file).is_some_and(|h| h.generation == generation) {
        map.remove(file);
    }
}

pub struct Rooms {
    map: RoomMap,
    ctx: Arc<RoomContext>,
    next_generation: AtomicU64,
    closing: AtomicBool,
}

impl Rooms {
    pub fn new(ctx: Arc<RoomContext>) -> Self {
        Self {
            map: Arc::default(),
            ctx,
            next_generation: AtomicU64::new(1),
            closing: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<FileId, RoomHandle>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The file's room, opening it if needed; `None` while the node shuts down.
    pub fn open(&self, file: &FileId) -> Option<RoomHandle> {
        self.open_by(file, Opener::default())
    }

    /// The file's room, opening it if needed for `opener` (whose shares of memory an
    /// opened room counts against).
    pub fn open_by(&self, file: &FileId, opener: Opener) -> Option<RoomHandle> {
        let mut map = self.lock();
        if let Some(h) = map.get(file) {
            if !h.tx.is_closed() {
                return Some(h.clone());
            }
        }
        if self.closing.load(Ordering::Acquire) {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let people = Arc::new(AtomicUsize::new(0));
        let serving = Arc::new(AtomicBool::new(false));
        let handle = RoomHandle {
            tx: tx.clone(),
            generation,
            people: people.clone(),
            serving: serving.clone(),
            inbound: Inbound::new(),
            presences: Arc::default(),
        };
        map.insert(file.clone(), handle.clone());
        let opening = Opening {
            file: file.clone(),
            generation,
            opener,
        };
        tokio::spawn(Room::run(
            opening,
            self.ctx.clone(),
            self.map.clone(),
            (tx, rx),
            people,
            serving,
            handle.presences.clone(),
        ));
        Some(handle)
    }

    /// Whether `opener` may open `record`'s room as far as its account's and address's
    /// shares of memory go, by what the file cost when it was last opened: a joiner
    /// refused for it costs a lookup, not a lease and a read of the document.
    pub fn may_open(
        &self,
        record: &crate::store::FileRecord,
        opener: &Opener,
    ) -> Result<(), super::JoinError> {
        let known = self.ctx.load_costs.get(&record.id).unwrap_or(0);
        self.ctx
            .shares
            .check(&record.owner, opener, known)
            .map_err(super::JoinError::OverShare)
    }

    /// The file's room if it is in memory and taking commands (never opens one).
    pub fn live(&self, file: &FileId) -> Option<RoomHandle> {
        self.lock().get(file).filter(|h| !h.tx.is_closed()).cloned()
    }

    /// The file's room if it is in memory.
    pub fn existing(&self, file: &FileId) -> Option<RoomHandle> {
        self.lock().get(file).cloned()
    }

    /// Whether this node serves the file's room right now (holds its lease, loaded): file
    /// routes then need not ask the coordinator who holds it.
    pub fn serving(&self, file: &FileId) -> bool {
        self.lock()
            .get(file)
            .is_some_and(|h| h.serving.load(Ordering::Acquire))
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The files whose rooms are in memory.
    pub fn files(&self) -> Vec<FileId> {
        self.lock().keys().cloned().collect()
    }

    /// Each room in memory with the people in it.
    pub fn sizes(&self) -> Vec<(FileId, usize)> {
        self.lock()
            .iter()
            .map(|(f, h)| (f.clone(), h.people.load(Ordering::Relaxed)))
            .collect()
    }

    /// The number of people in the fullest room.
    pub fn busiest(&self) -> usize {
        self.lock()
            .values()
            .map(|h| h.people.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
    }

    /// Stops opening rooms, then lets every room finish what it accepted and
    /// close its sockets with 1012.
    pub async fn shutdown(&self) {
        self.closing.store(true, Ordering::Release);
        let handles: Vec<RoomHandle> = self.lock().values().cloned().collect();
        let mut waits = Vec::new();
        for h in handles {
            let (reply, done) = oneshot::channel();
            if h.tx.send(RoomCmd::Shutdown(reply)).is_ok() {
                waits.push(done);
            }
        }
        for done in waits {
            let _ = done.await;
        }
    }
}
