//! After the disk: a turn's patches reported durable, and what waited for
//! them (acks, relays, welcomes) released in version order.

use std::time::Instant;

use super::core::RoomCore;
use super::exit::Exit;
use super::pending::Pending;
use crate::journal::Appended;
use crate::outbox::Msg;
use crate::store::StoreError;

impl RoomCore {
    /// Queues `p` until its version is durable, or delivers it now if it is.
    pub(super) fn after_durable(&mut self, p: Pending) {
        if p.version() <= self.durable && self.pending.is_empty() {
            self.deliver(p);
        } else {
            if matches!(p, Pending::Welcome { .. }) {
                self.rules.metrics.welcomes_waited.inc();
            }
            self.pending.push_back(p);
        }
    }

    pub(super) fn deliver(&mut self, p: Pending) {
        match p {
            Pending::Patch {
                v,
                from,
                ack,
                relay,
                ..
            } => {
                // Counted before anything is sent: whoever reads the metrics after
                // their ack or relay must find it counted (sockets write on other threads).
                let relayed = self
                    .participants
                    .iter()
                    .filter(|(conn, m)| **conn != from && m.from_version < v)
                    .count();
                let metrics = &self.rules.metrics;
                metrics.patches_acked.inc();
                metrics.messages_sent.with_label_values(&["ack"]).inc();
                metrics
                    .messages_sent
                    .with_label_values(&["patch"])
                    .inc_by(relayed as u64);
                for (conn, m) in &self.participants {
                    if *conn == from {
                        m.outbox.send(ack.clone());
                    } else if m.from_version < v {
                        m.outbox.send(relay.clone());
                    }
                }
            }
            Pending::Direct { to, frame, .. } => {
                if let Some(m) = self.participants.get(&to) {
                    m.outbox.send(frame);
                }
            }
            Pending::Welcome {
                to, frame, charged, ..
            } => {
                let sent = self.participants.get(&to).is_some_and(|m| {
                    self.rules
                        .metrics
                        .messages_sent
                        .with_label_values(&["welcome"])
                        .inc();
                    m.outbox.open_with(frame, &self.rules.welcome_budget)
                });
                // Left before it, or refused 1013 for the large-message allowance: what
                // its address was charged is given back.
                if let (false, Some((address, bytes))) = (sent, charged) {
                    self.rules.documents_sent.refund(&address, bytes);
                }
            }
            Pending::Doc { v, doc, reply } => {
                let _ = reply.send((v, doc));
            }
            Pending::Version { job, .. } => self.effect(super::exit::Effect::History(job)),
            Pending::Restore {
                v,
                relay,
                notice,
                reply,
                done,
            } => {
                self.relay_patch(v, &relay);
                self.broadcast_history(notice, "restored");
                let _ = reply.send(Ok(done));
            }
            Pending::Server {
                v,
                relay,
                reply,
                done,
            } => {
                if let Some(relay) = relay {
                    self.relay_patch(v, &relay);
                }
                let _ = reply.send(Ok(done));
            }
        }
    }

    /// A patch made by the room (a restore, a server patch) to everyone who joined before
    /// version `v`, counted as sent.
    fn relay_patch(&self, v: u64, relay: &Msg) {
        let mut relayed = 0;
        for m in self.participants.values() {
            if m.from_version < v {
                // A restore's patch may be larger than a socket's queue.
                m.outbox
                    .send_large(relay.clone(), &self.rules.welcome_budget);
                relayed += 1;
            }
        }
        self.rules
            .metrics
            .messages_sent
            .with_label_values(&["patch"])
            .inc_by(relayed);
    }

    pub(super) fn release(&mut self) {
        while self
            .pending
            .front()
            .is_some_and(|p| p.version() <= self.durable)
        {
            let p = self.pending.pop_front().expect("front exists");
            self.deliver(p);
        }
    }

    pub(super) fn appended(&mut self, a: Appended, now: Instant) -> Option<Exit> {
        match a.result {
            Ok(()) => {
                self.durable = self.durable.max(a.upto);
                while self
                    .in_flight
                    .front()
                    .is_some_and(|(v, _, _)| *v <= self.durable)
                {
                    let (_, at, n) = self.in_flight.pop_front().expect("front exists");
                    let secs = now.saturating_duration_since(at).as_secs_f64();
                    for _ in 0..n {
                        self.rules.metrics.patch_durable_seconds.observe(secs);
                    }
                }
                self.release();
                self.maybe_snapshot(now);
                None
            }
            Err(StoreError::NotFound) => Some(Exit::Deleted),
            Err(e) => {
                tracing::warn!(file = %self.file, error = %e, "append fenced; closing the room");
                Some(Exit::Fenced)
            }
        }
    }
}
