//! A client's life: joins, sessions, and (tracking, or told to come back) rejoins with backoff.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::join::{close, retryable, JoinFailed};
use super::state::State;
use super::{Client, ClientEnd, End, Ended};
use crate::measure::add;
use crate::setup::random_id;

/// The first wait before coming back; it doubles up to a second.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);

impl Client {
    /// Runs the client until the run ends, or the server closes it (in tracking mode it then
    /// reconnects with backoff and resumes from its version, resending unconfirmed patches
    /// with their original ids).
    pub async fn run(mut self) -> ClientEnd {
        let m = self.measures.clone();
        let client_id = random_id(24);
        let mut st = State::default();
        let mut first = true;
        let mut backoff = FIRST_BACKOFF;
        let mut connected_at_end = false;
        loop {
            let since = (!first && self.track).then_some(st.version);
            let (mut ws, welcome, full) = match self.join(&client_id, since).await {
                Ok(joined) => joined,
                Err(failed) => {
                    let Some(wait) = self.retry_after(failed, first, backoff) else {
                        break;
                    };
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            self.count_join(first);
            first = false;
            backoff = FIRST_BACKOFF;
            add(&m.counters.open, 1);
            if let Some(full) = &full {
                st.welcome(full);
            }
            let ended = self.session(&mut ws, welcome, &mut st).await;
            m.counters.open.fetch_sub(1, Ordering::Relaxed);
            match ended {
                Ended::Run(End::Close) => {
                    let unacked = if self.track {
                        st.pending.len() as u64
                    } else {
                        st.op_id.saturating_sub(st.acked_count)
                    };
                    add(&m.counters.unacked_patches, unacked);
                    connected_at_end = true;
                    close(ws).await;
                    break;
                }
                // Dropping `ws` closes the connection at once.
                Ended::Run(_) => {
                    connected_at_end = true;
                    break;
                }
                Ended::Lost if self.track && self.run_going() => {
                    let jitter = rand::random_range(0..=25);
                    tokio::time::sleep(Duration::from_millis(jitter)).await;
                }
                Ended::Lost => break,
            }
        }
        ClientEnd {
            index: self.plan.index,
            file: self.plan.file,
            rect: self.plan.rect.clone(),
            doc: (self.track && !first).then(|| (st.version, std::mem::take(&mut st.doc))),
            acked: std::mem::take(&mut st.acked),
            seen: std::mem::take(&mut st.seen),
            connected_at_end,
        }
    }

    /// A join that worked: the first one connects, later ones reconnect.
    fn count_join(&self, first: bool) {
        let m = &self.measures;
        if first {
            add(&m.counters.connected, 1);
        } else {
            add(&m.counters.reconnects, 1);
            m.counters
                .last_rejoin_us
                .fetch_max(m.elapsed().as_micros() as u64, Ordering::Relaxed);
        }
    }

    /// After a failed join: how long to wait before trying again, or None when this client
    /// gives up.
    fn retry_after(
        &mut self,
        failed: JoinFailed,
        first: bool,
        backoff: Duration,
    ) -> Option<Duration> {
        let m = self.measures.clone();
        let JoinFailed {
            code,
            retry: hint,
            reset,
            unreachable,
        } = failed;
        if reset {
            add(&m.counters.handshake_resets, 1);
        }
        // A router that refuses or resets the connection is down: a load balancer's health
        // check would send the next attempt to another one.
        if (unreachable || reset) && self.ws_urls.len() > 1 {
            self.via = (self.via + 1) % self.ws_urls.len();
            add(&m.counters.router_switches, 1);
        }
        // Tracking clients behave as the contract asks of a real one: a close they can
        // act on by coming back (4009 while rooms settle, 1012, 1013, a lost
        // connection) is retried with backoff, the first join included, or after
        // the node's `retry-ms` hint when it gave one.
        let retry = (self.track || (first && self.comes_back))
            && self.run_going()
            && code.is_none_or(retryable);
        if let Some(code) = code {
            self.count_close(&code.to_string());
        }
        if !retry {
            if first {
                add(&m.counters.connection_errors, 1);
            }
            return None;
        }
        if first {
            add(&m.counters.join_retries, 1);
        } else {
            add(&m.counters.reconnect_failures, 1);
        }
        let jitter = rand::random_range(0..=backoff.as_millis() as u64 / 2);
        Some(hint.unwrap_or(backoff + Duration::from_millis(jitter)))
    }
}
