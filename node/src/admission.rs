//! Admission control for joins. A node hit by a storm of joins (a dead node's people all
//! coming back at once) works on at most `ATRIUM_JOINS_IN_FLIGHT` of them at a time; the
//! rest wait their turn for up to `ATRIUM_JOIN_WAIT_MS`, then are told to come back later
//! (1013) with a jittered hint of when, so that they do not return as one wave.
//!
//! Every hello ends in one of three outcomes, counted in `atrium_joins_total{outcome}`:
//! `admitted` (welcomed), `deferred` (closed with a code that asks the client to come back:
//! 1012, 1013, 4008, 4009, 4031...) or `refused` (a code that tells it to stop).

use std::sync::Arc;
use std::time::Duration;

use atrium_protocol::CloseCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::Metrics;

/// The middle of the hint given to a deferred join; the hint is drawn between half and
/// one and a half of it.
const RETRY_BASE: Duration = Duration::from_secs(2);

pub struct Admission {
    turns: Arc<Semaphore>,
    wait: Duration,
}

/// A join's turn: the next waiting join goes when this is dropped.
pub type Turn = OwnedSemaphorePermit;

impl Admission {
    pub fn new(in_flight: usize, wait: Duration) -> Self {
        Self {
            turns: Arc::new(Semaphore::new(in_flight.max(1))),
            wait,
        }
    }

    /// Waits for a turn; `None` when none came within the wait.
    pub async fn admit(&self) -> Option<Turn> {
        tokio::time::timeout(self.wait, self.turns.clone().acquire_owned())
            .await
            .ok()?
            .ok()
    }
}

/// How a hello ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Admitted,
    Deferred,
    Refused,
}

impl Outcome {
    /// The outcome of a hello closed with `code`.
    pub fn of_close(code: CloseCode) -> Self {
        if code.is_final() {
            Outcome::Refused
        } else {
            Outcome::Deferred
        }
    }

    /// The `outcome` label of `atrium_joins_total`.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Admitted => "admitted",
            Outcome::Deferred => "deferred",
            Outcome::Refused => "refused",
        }
    }

    pub fn count(self, metrics: &Metrics) {
        metrics.joins.with_label_values(&[self.label()]).inc();
    }
}

/// The reason of a 1013 close: `why`, then `; retry-ms=N` with N drawn at random between
/// 1 and 3 s (the contract's hint of when to come back).
pub fn come_back_later(why: &str) -> String {
    let hint = RETRY_BASE.mul_f64(0.5 + rand::random::<f64>());
    atrium_protocol::with_retry_hint(why, hint.as_millis() as u64)
}

/// The reason of a 1013 close that knows how long the wait is: `why`, then `; retry-ms=N`
/// with N that long plus up to a quarter more, so refused clients do not all come back at
/// once.
pub fn come_back_after(why: &str, wait: Duration) -> String {
    let hint = wait.mul_f64(1.0 + 0.25 * rand::random::<f64>());
    atrium_protocol::with_retry_hint(why, hint.as_millis().max(1) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_that_ask_to_come_back_defer_the_rest_refuse() {
        let deferred = [
            CloseCode::TryAgainLater,
            CloseCode::ServiceRestart,
            CloseCode::Moved,
            CloseCode::FileFull,
        ];
        let refused = [
            CloseCode::Unauthorized,
            CloseCode::Forbidden,
            CloseCode::NotFound,
            CloseCode::TooManySockets,
        ];
        let cases = deferred.map(|c| (c, Outcome::Deferred));
        for (code, want) in cases
            .into_iter()
            .chain(refused.map(|c| (c, Outcome::Refused)))
        {
            assert_eq!(Outcome::of_close(code), want, "{code}");
        }
    }

    #[test]
    fn hints_are_jittered_between_one_and_three_seconds_and_fit_a_close_frame() {
        let hints: Vec<u64> = (0..200)
            .map(|_| {
                let reason = come_back_later("the node is busy with other joins");
                assert!(reason.len() <= 123, "{reason}");
                atrium_protocol::retry_hint_ms(&reason).unwrap()
            })
            .collect();
        assert!(hints.iter().all(|h| (1000..=3000).contains(h)), "{hints:?}");
        let (lo, hi) = (hints.iter().min().unwrap(), hints.iter().max().unwrap());
        assert!(hi - lo > 1000, "not spread: {lo}..{hi}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_join_past_the_wait_gets_no_turn_and_the_next_gets_one_when_a_turn_ends() {
        let admission = Admission::new(1, Duration::from_millis(100));
        let first = admission.admit().await.expect("a free turn");
        assert!(admission.admit().await.is_none(), "waited past the wait");
        drop(first);
        assert!(admission.admit().await.is_some());
    }
}
