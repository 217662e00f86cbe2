//! The rooms of this node, by file: opened on first use, gone when idle.

use atrium_protocol::CloseCode;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::{JoinError, JoinRequest, Joined, Room, RoomCmd, RoomContext};
use crate::ids::FileId;
use crate::store::FileRecord;

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
}

/// Bytes of patches on their way into a room, bounded: a socket waits (and stops
/// reading) while the room is this far behind, so parsed patches never pile up in
/// its queue faster than it applies them.
pub struct Inbound {
    bytes: AtomicUsize,
    drained: tokio::sync::Notify,
}

/// Most bytes of patches (as text) waiting in one room's queue.
pub const INBOUND_BYTES: usize = 1024 * 1024;

impl Inbound {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            bytes: AtomicUsize::new(0),
            drained: tokio::sync::Notify::new(),
        })
    }

    /// Waits until the room has room for `bytes` more (one patch always fits
    /// into an empty queue), then counts them until the ticket is dropped.
    pub async fn admit(self: &Arc<Self>, bytes: usize) -> Ticket {
        loop {
            let drained = self.drained.notified();
            let now = self.bytes.load(Ordering::Acquire);
            if now == 0 || now + bytes <= INBOUND_BYTES {
                self.bytes.fetch_add(bytes, Ordering::AcqRel);
                return Ticket {
                    inbound: self.clone(),
                    bytes,
                };
            }
            drained.await;
        }
    }
}

/// A patch's place in its room's queue; given back when the command is done with.
pub struct Ticket {
    inbound: Arc<Inbound>,
    bytes: usize,
}

impl Ticket {
    /// A ticket of no room's queue, for driving a room core by hand.
    #[cfg(test)]
    pub fn detached() -> Ticket {
        Ticket {
            inbound: Inbound::new(),
            bytes: 0,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.inbound.bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        self.inbound.drained.notify_waiters();
    }
}

pub type RoomMap = Arc<Mutex<HashMap<FileId, RoomHandle>>>;

/// Asking a room again after it closed under a caller: pauses that double from 5 ms
/// to at most 200 ms, for at most 2 s in all. A room closes for a moment only (idle,
/// handed over), so a pause lets its successor start; a spin would give up in
/// microseconds and refuse people a room that was about to open.
struct Again {
    pause: Duration,
    until: tokio::time::Instant,
}

impl Again {
    const FIRST: Duration = Duration::from_millis(5);
    const MOST: Duration = Duration::from_millis(200);
    const WITHIN: Duration = Duration::from_secs(2);

    fn new() -> Self {
        Self {
            pause: Self::FIRST,
            until: tokio::time::Instant::now() + Self::WITHIN,
        }
    }

    /// Waits before the next try; false when the time for tries is over.
    async fn pause(&mut self) -> bool {
        if tokio::time::Instant::now() + self.pause > self.until {
            return false;
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(Self::MOST);
        true
    }
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
        };
        map.insert(file.clone(), handle.clone());
        tokio::spawn(Room::run(
            file.clone(),
            generation,
            self.ctx.clone(),
            self.map.clone(),
            (tx, rx),
            people,
            serving,
        ));
        Some(handle)
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

    /// The number of people in the fullest room.
    pub fn busiest(&self) -> usize {
        self.lock()
            .values()
            .map(|h| h.people.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
    }

    /// Joins a socket to the file's room. A joiner waits in the room's queue while the
    /// room loads, and gets the load's own result; one that reached a room as it was
    /// closing asks again after a pause (see [`Again`]).
    pub async fn join(
        &self,
        file: &FileId,
        req: JoinRequest,
    ) -> Result<(RoomHandle, Joined), JoinError> {
        let mut again = Again::new();
        loop {
            let handle = self
                .open(file)
                .ok_or(JoinError::Unavailable(CloseCode::ServiceRestart))?;
            let (reply, answer) = oneshot::channel();
            if handle.tx.send(RoomCmd::Join(req.clone(), reply)).is_ok() {
                match answer.await {
                    Ok(Err(JoinError::Retry)) | Err(_) => {}
                    Ok(result) => return result.map(|joined| (handle, joined)),
                }
            }
            if !again.pause().await {
                return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
            }
        }
    }

    /// The current document as the room holds it (opening the room if needed).
    pub async fn document(&self, file: &FileId) -> Result<(u64, String), JoinError> {
        let mut again = Again::new();
        loop {
            let handle = self
                .open(file)
                .ok_or(JoinError::Unavailable(CloseCode::TryAgainLater))?;
            let (reply, answer) = oneshot::channel();
            if handle.tx.send(RoomCmd::GetDoc(reply)).is_ok() {
                if let Ok(doc) = answer.await {
                    return Ok(doc);
                }
                // The room ended before answering: it failed to load or went idle.
                if self.existing(file).is_none() && self.ctx.store.file(file).await.is_err() {
                    return Err(JoinError::NotFound);
                }
            }
            if !again.pause().await {
                return Err(JoinError::Unavailable(CloseCode::TryAgainLater));
            }
        }
    }

    /// Tells a live room its file's settings changed.
    pub fn file_changed(&self, record: &FileRecord) {
        if let Some(h) = self.existing(&record.id) {
            let _ = h.tx.send(RoomCmd::FileChanged(record.clone()));
        }
    }

    pub fn file_deleted(&self, file: &FileId) {
        if let Some(h) = self.existing(file) {
            let _ = h.tx.send(RoomCmd::Deleted);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn asking_again_pauses_longer_each_time_and_stops_within_two_seconds() {
        let started = tokio::time::Instant::now();
        let mut again = Again::new();
        let mut pauses = Vec::new();
        loop {
            let before = tokio::time::Instant::now();
            if !again.pause().await {
                break;
            }
            pauses.push(before.elapsed().as_millis());
        }
        assert_eq!(pauses[..6], [5, 10, 20, 40, 80, 160]);
        assert!(pauses[6..].iter().all(|&p| p == 200), "{pauses:?}");
        let spent = started.elapsed();
        assert!(
            spent <= Again::WITHIN && spent > Again::WITHIN - Again::MOST,
            "{spent:?}"
        );
    }
}
