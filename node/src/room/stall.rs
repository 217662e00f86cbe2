//! How long the room's oldest unconfirmed patch has waited for the store,
//! counting only time the node was running.
//!
//! A node that was frozen (SIGSTOP, a VM paused, a laptop asleep) wakes up with
//! every clock jumped forward. Its patches did not wait for the store during the
//! freeze, and its lease most likely lapsed meanwhile: the room must learn that
//! and close with 4009 (moved), not mistake the freeze for a store outage and
//! close with 1013 first.

use std::time::{Duration, Instant};

/// Housekeeping runs once a second; a gap this long between two runs means the
/// node did not run in between.
const FROZEN_GAP: Duration = Duration::from_secs(3);

/// What the room's store-stall check remembers between housekeeping runs.
#[derive(Debug, Default)]
pub(super) struct StallClock {
    /// Whether this stall was announced already.
    pub noticed: bool,
    /// The last housekeeping run.
    last_run: Option<Instant>,
    /// When the node last woke from a freeze: waiting counts from here.
    woke: Option<Instant>,
}

impl StallClock {
    /// How long a patch handed to the journal at `since` has waited, as of
    /// `now` (one housekeeping run): time the node was frozen does not count.
    pub fn waited(&mut self, since: Instant, now: Instant) -> Duration {
        if self
            .last_run
            .is_some_and(|last| now.saturating_duration_since(last) >= FROZEN_GAP)
        {
            self.woke = Some(now);
        }
        self.last_run = Some(now);
        let from = self.woke.map_or(since, |woke| woke.max(since));
        now.saturating_duration_since(from)
    }

    /// Nothing waits for the store: the next stall is announced afresh.
    pub fn clear(&mut self, now: Instant) {
        self.noticed = false;
        self.last_run = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn waiting_counts_from_the_hand_over_while_the_node_runs() {
        let t0 = Instant::now();
        let mut clock = StallClock::default();
        clock.clear(t0);
        for i in 1..=6 {
            assert_eq!(clock.waited(t0, t0 + i * S), i * S);
        }
    }

    #[test]
    fn a_freeze_does_not_count_as_waiting() {
        let t0 = Instant::now();
        let mut clock = StallClock::default();
        clock.clear(t0);
        assert_eq!(clock.waited(t0, t0 + S), S);
        // Frozen for 8 s: the first run after waking counts from the wake.
        assert_eq!(clock.waited(t0, t0 + 9 * S), Duration::ZERO);
        assert_eq!(clock.waited(t0, t0 + 10 * S), S);
        // A patch handed over after the wake counts from its own hand-over.
        let later = t0 + 10 * S;
        assert_eq!(clock.waited(later, t0 + 12 * S), 2 * S);
    }

    #[test]
    fn a_freeze_with_nothing_in_flight_is_noticed_too() {
        let t0 = Instant::now();
        let mut clock = StallClock::default();
        clock.clear(t0);
        // The patch was handed over just before a freeze; the first run after
        // it sees the gap even though no run saw the patch before.
        assert_eq!(clock.waited(t0, t0 + 7 * S), Duration::ZERO);
    }
}
