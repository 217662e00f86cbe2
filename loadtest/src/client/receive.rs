//! What the client does with each message from the node: counted, timed, and (tracking)
//! applied to its model.

use serde_json::Value;

use super::delivered::presences_delivered;
use super::messages::{record_presences, Incoming};
use super::session::Connection;
use super::state::State;
use super::{leading_type, Client, PRESENCE_SAMPLE};
use crate::measure::{add, Measures};
use crate::schedule::{self, Schedule};

impl Client {
    /// One text message from the node: counted, timed, and (tracking) applied.
    pub(super) fn received(&self, c: &mut Connection, text: &str, st: &mut State) {
        let m = &self.measures;
        add(&m.counters.messages_received, 1);
        add(&m.counters.bytes_received, text.len() as u64);
        if leading_type(text) == Some("presences") {
            add(&m.counters.presence_received, 1);
            add(
                &m.counters.delivered_updates,
                presences_delivered(text, &c.me),
            );
            c.presence_seen += 1;
            if c.presence_seen % PRESENCE_SAMPLE == 0 {
                record_presences(m, text);
            }
            return;
        }
        let Ok(msg) = serde_json::from_str::<Incoming>(text) else {
            return;
        };
        match msg.kind.as_str() {
            "ack" | "patch" => self.received_patch(c, &msg, text, st),
            "presence" => {
                add(&m.counters.presence_received, 1);
                // One person's presence on its own (servers that send them one by one).
                let mine = msg.id.as_ref().and_then(Value::as_str) == Some(c.me.as_str());
                add(&m.counters.delivered_updates, u64::from(!mine));
            }
            "presence-rate" => {
                if let Some(hz) = msg.hz {
                    let presence_hz = schedule::presence_rate(self.presence_rate, Some(hz));
                    c.presence = Schedule::new(m.elapsed(), presence_hz, c.phase);
                }
            }
            "role" => {
                let mine = msg.id.as_ref().and_then(|v| v.as_str()) == Some(c.me.as_str());
                if mine && c.asked_edit {
                    c.editing = msg.role.as_deref() == Some("editor");
                }
            }
            "reject" => {
                add(&m.counters.rejected, 1);
                let code = msg.code.as_ref().and_then(|c| c.as_str()).unwrap_or("?");
                Measures::count(&m.rejects, code);
                // A rejected patch will never be acked.
                if let Some(id) = msg.id.as_ref().and_then(Value::as_u64) {
                    st.pending.remove(&id);
                }
            }
            "notice" => {
                let code = msg.code.map(|c| c.to_string()).unwrap_or_default();
                if code == "429" {
                    add(&m.counters.rate_limited, 1);
                }
                Measures::count(&m.notices, &code);
            }
            _ => {}
        }
    }

    /// An ack of one of ours, or someone else's patch: versions checked, latency recorded.
    pub(super) fn received_patch(
        &self,
        c: &mut Connection,
        msg: &Incoming,
        text: &str,
        st: &mut State,
    ) {
        let m = &self.measures;
        if let Some(v) = msg.v {
            let (gap, out_of_order) = c.versions.see(v);
            add(&m.counters.dropped_patches, gap);
            add(&m.counters.out_of_order, u64::from(out_of_order));
        }
        if msg.kind == "ack" {
            add(&m.counters.acks_received, 1);
            st.acked_count += 1;
            if let Some(t) = msg.t {
                m.record_since(&m.ack, t);
            }
            if self.track {
                let id = msg.id.as_ref().and_then(Value::as_u64).unwrap_or(0);
                st.ack(id, msg.v);
            }
        } else if msg.by.as_deref() != Some(c.me.as_str()) {
            add(&m.counters.patches_received, 1);
            add(&m.counters.delivered_updates, 1);
            if let Some(t) = msg.t {
                m.record_since(&m.relay, t);
            }
            if self.track {
                if let Ok(full) = serde_json::from_str::<Value>(text) {
                    st.patch(msg.v, full.get("ops"));
                }
            }
        }
    }
}
