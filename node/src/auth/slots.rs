//! The hashing slots, handed out in two classes: sign-ins to accounts that exist first,
//! then everything else (sign-ups, and sign-ins to emails with no account, which are
//! hashed against a dummy so they take as long). A flood of wrong passwords for made-up
//! emails from many addresses kept every slot busy and answered a real person 503 after
//! waiting 2 s (the tenth review: 5 of 6 honest sign-ins, 220 addresses); now it waits
//! only behind other sign-ins to real accounts.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

/// Which line a hash waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// A sign-in to an account that exists.
    First,
    /// A sign-up, or a sign-in to an email with no account.
    Later,
}

/// `width` slots; a waiting [`Line::First`] is always served before a [`Line::Later`].
pub struct Slots {
    state: Mutex<State>,
}

struct State {
    free: usize,
    first: VecDeque<oneshot::Sender<Slot>>,
    later: VecDeque<oneshot::Sender<Slot>>,
}

/// A slot held; the next in line gets it when this is dropped.
pub struct Slot {
    slots: Option<Arc<Slots>>,
}

impl Slots {
    pub fn new(width: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                free: width.max(1),
                first: VecDeque::new(),
                later: VecDeque::new(),
            }),
        })
    }

    /// A slot once one is free and nobody ahead in `line` (or in a line before it) waits;
    /// `None` after `wait`.
    pub async fn take(self: &Arc<Self>, line: Line, wait: Duration) -> Option<Slot> {
        let waiting = {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let ahead = match line {
                Line::First => !s.first.is_empty(),
                Line::Later => !s.first.is_empty() || !s.later.is_empty(),
            };
            if s.free > 0 && !ahead {
                s.free -= 1;
                return Some(Slot {
                    slots: Some(self.clone()),
                });
            }
            let (tx, rx) = oneshot::channel();
            match line {
                Line::First => s.first.push_back(tx),
                Line::Later => s.later.push_back(tx),
            }
            rx
        };
        // A slot handed to a waiter that has given up comes back when the unsent or
        // unreceived `Slot` is dropped.
        tokio::time::timeout(wait, waiting).await.ok()?.ok()
    }

    fn give_back(self: &Arc<Self>) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let Some(next) = s.first.pop_front().or_else(|| s.later.pop_front()) else {
                s.free += 1;
                return;
            };
            if next.is_closed() {
                continue;
            }
            let slot = Slot {
                slots: Some(self.clone()),
            };
            match next.send(slot) {
                Ok(()) => return,
                // Gone between the look and the send: the slot comes back through its
                // drop, which must not find the lock held.
                Err(mut slot) => {
                    slot.slots = None;
                    continue;
                }
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.give_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn sign_ins_to_real_accounts_go_first() {
        let slots = Slots::new(1);
        let held = slots.take(Line::Later, WAIT).await.expect("a free slot");
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for (n, line) in [(1, Line::Later), (2, Line::Later), (3, Line::First)] {
            let (slots, order) = (slots.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                let slot = slots.take(line, WAIT).await.expect("a slot in time");
                order.lock().unwrap().push(n);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(slot);
            }));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(held);
        for w in waiting {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [3, 1, 2]);
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_does_not_keep_a_slot() {
        let slots = Slots::new(1);
        let held = slots.take(Line::First, WAIT).await.expect("a free slot");
        assert!(slots
            .take(Line::First, Duration::from_millis(20))
            .await
            .is_none());
        drop(held);
        // The one that gave up is skipped: the slot is free at once.
        let again = slots.take(Line::Later, Duration::from_millis(20)).await;
        assert!(again.is_some(), "the slot came back");
    }
}
