//! One turn of the shell: the commands that came together, handed to the core,
//! and the effects it returned carried out.

use std::time::Instant;

use super::super::exit::{Effect, Exit};
use super::super::{snapshot, RoomCmd};
use super::Room;
use crate::journal::JournalEntry;

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
