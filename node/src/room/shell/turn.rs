//! One turn of the shell: the commands that came together, handed to the core,
//! and the effects it returned carried out.

use std::time::Instant;

use super::super::exit::{Effect, Exit};
use super::super::{snapshot, RoomCmd};
use super::Room;
use crate::journal::JournalEntry;
use crate::lane;

/// Commands a room keeps room for between turns: a backlog's batch (up to 256)
/// is given back once handled, so a room that was behind once does not keep it.
const COMMANDS_KEPT: usize = 64;

/// Empties the turn's batch and gives back what a large one grew it to.
fn settle<T>(commands: &mut Vec<T>) {
    commands.clear();
    commands.shrink_to(COMMANDS_KEPT);
}

impl Room {
    /// One turn: the commands that arrived together, then their patches to the journal.
    pub(super) fn turn(&mut self, commands: &mut Vec<RoomCmd>) -> Option<Exit> {
        // One reading of the clock for the turn: its commands arrived together.
        let now = Instant::now();
        let mut exit = None;
        for cmd in commands.drain(..) {
            if let RoomCmd::CheckLease = cmd {
                if let Some(keeper) = &self.lease {
                    keeper.check_now();
                }
                continue;
            }
            exit = self.core.handle(cmd, now);
            if exit.is_some() {
                break;
            }
        }
        settle(commands);
        if exit.is_none() {
            self.core.end_turn(now);
        }
        exit
    }

    /// Carries out what the core decided.
    pub(super) fn carry_out(&mut self) {
        for effect in self.core.effects() {
            match effect {
                Effect::Append(append) => {
                    let tx = self.tx.clone();
                    let submitted = self.ctx.journal.submit(JournalEntry {
                        append,
                        done: Box::new(move |a| {
                            let _ = tx.send(RoomCmd::Appended(a));
                        }),
                    });
                    if !submitted {
                        // The journal only stops with the node: every room is in the same place.
                        tracing::error!("journal stopped; patches stay unacked");
                    }
                }
                Effect::History(job) => {
                    if let Some(history) = &self.history {
                        let _ = history.send(job);
                    }
                }
                Effect::Webhook(kind, data, address) => {
                    let senders = &mut self.person_senders;
                    if kind.starts_with("person.")
                        && !senders.take_with(&mut self.person_events, address, Instant::now())
                    {
                        if self.ctx.webhooks.active() {
                            self.ctx.rules.metrics.webhooks.dropped.inc();
                        }
                        continue;
                    }
                    let at = crate::clock::unix_ms();
                    let event = crate::webhook::event::event(&self.file, kind, at, data);
                    self.ctx.webhooks.emit(event);
                }
                Effect::Restore(job) => {
                    // The heavy part off the room's task; the room goes on meanwhile.
                    let tx = self.tx.clone();
                    let work = lane::run(job.bytes(), &self.ctx.rules.metrics, move || job.run());
                    tokio::spawn(async move {
                        let _ = tx.send(RoomCmd::RestorePrepared(work.await));
                    });
                }
                Effect::Snapshot(job) => {
                    snapshot::spawn(
                        job,
                        self.ctx.store.clone(),
                        self.ctx.rules.metrics.clone(),
                        self.tx.clone(),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_batch_is_given_back_after_its_turn() {
        let mut commands: Vec<u64> = Vec::with_capacity(COMMANDS_KEPT);
        commands.extend(0..256);
        settle(&mut commands);
        assert!(commands.is_empty());
        assert!(
            commands.capacity() <= COMMANDS_KEPT,
            "{}",
            commands.capacity()
        );
    }
}
