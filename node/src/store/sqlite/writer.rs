//! The one writing connection, and the order writes take it in.

use std::sync::{Condvar, Mutex, MutexGuard};

use rusqlite::Connection;

/// The writing connection, shared by the journal and every other write. SQLite has
/// one writer at a time, so a burst of large writes (new files with big documents)
/// would hold every room's commit behind all of them; the journal's commits go
/// first instead, and wait for at most the one write under way.
pub(super) struct Writer {
    conn: Mutex<Connection>,
    gate: Mutex<Gate>,
    turn: Condvar,
}

/// Who holds the connection, how many journal commits wait for it, and the turns of other
/// writes: they go in the order they asked, so a write in many short turns (a large
/// document's parts) cannot take the next turn again and again ahead of one that waits.
#[derive(Default)]
struct Gate {
    busy: bool,
    urgent: usize,
    /// Turns given out to other writes, and turns they have taken.
    issued: u64,
    served: u64,
}

/// The connection while one write holds it; the next waiting write goes on drop.
pub(super) struct Writing<'a> {
    conn: Option<MutexGuard<'a, Connection>>,
    writer: &'a Writer,
}

impl std::ops::Deref for Writing<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for Writing<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("held until drop")
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.conn = None;
        lock(&self.writer.gate).busy = false;
        self.writer.turn.notify_all();
    }
}

impl Writer {
    pub(super) fn new(conn: Connection) -> Self {
        Self {
            conn: Mutex::new(conn),
            gate: Mutex::new(Gate::default()),
            turn: Condvar::new(),
        }
    }

    /// The connection for a journal commit, ahead of other writes that wait.
    pub(super) fn urgent(&self) -> Writing<'_> {
        self.urgent_noting(|| {})
    }

    /// As [`Writer::urgent`], calling `noted` once the commit counts as waiting, before it
    /// waits (tests look at what the writer has done by then).
    pub(super) fn urgent_noting(&self, noted: impl FnOnce()) -> Writing<'_> {
        lock(&self.gate).urgent += 1;
        noted();
        let mut gate = self.wait(lock(&self.gate), |g| g.busy);
        gate.urgent -= 1;
        self.take(gate)
    }

    /// The connection for any other write, once no journal commit waits for it and every
    /// other write that asked before has had its turn.
    pub(super) fn ordinary(&self) -> Writing<'_> {
        self.ordinary_noting(|| {})
    }

    /// As [`Writer::ordinary`], calling `noted` once the write has its place in line,
    /// before it waits (tests look at what other writes have done by then).
    pub(super) fn ordinary_noting(&self, noted: impl FnOnce()) -> Writing<'_> {
        let turn = {
            let mut gate = lock(&self.gate);
            gate.issued += 1;
            gate.issued - 1
        };
        noted();
        let mut gate = self.wait(lock(&self.gate), |g| {
            g.busy || g.urgent > 0 || g.served != turn
        });
        gate.served += 1;
        self.take(gate)
    }

    fn wait<'a>(
        &self,
        gate: MutexGuard<'a, Gate>,
        blocked: impl FnMut(&mut Gate) -> bool,
    ) -> MutexGuard<'a, Gate> {
        self.turn
            .wait_while(gate, blocked)
            .unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, mut gate: MutexGuard<'_, Gate>) -> Writing<'_> {
        gate.busy = true;
        drop(gate);
        Writing {
            conn: Some(lock(&self.conn)),
            writer: self,
        }
    }
}

/// A panic while holding a lock cannot leave SQLite half-written (the transaction
/// rolls back), so a poisoned lock is still usable.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests;
