//! What the client sends on its schedules: cursor moves and patches.

use futures_util::SinkExt;
use tokio_tungstenite::tungstenite::Message;

use super::session::Connection;
use super::state::State;
use super::{cursor_at, mark, Client, Socket};
use crate::measure::add;

impl Client {
    /// Unconfirmed patches go again, with their original ids (the node acks one it already
    /// has without applying it twice).
    pub(super) async fn resend_pending(&self, ws: &mut Socket, st: &State) {
        let m = &self.measures;
        for (id, ops) in &st.pending {
            let msg = format!(r#"{{"type":"patch","id":{id},"ops":{ops}}}"#);
            if ws.send(Message::Text(msg.into())).await.is_ok() {
                add(&m.counters.resent_patches, 1);
                add(&m.counters.messages_sent, 1);
            }
        }
    }

    /// The next cursor move of the presence schedule.
    pub(super) async fn send_presence(&self, c: &mut Connection, ws: &mut Socket) {
        let m = &self.measures;
        let Some(s) = c.presence.as_mut() else { return };
        add(&m.counters.sends_skipped, s.advance(m.elapsed()));
        c.step += 1;
        let (x, y) = cursor_at(self.plan.index, c.step);
        // Written in one go (the page id as `page_id` spells it): this is the most frequent
        // message the generator builds.
        let msg = format!(
            r#"{{"type":"presence","page":"p{}","cursor":[{x},{y}],"t":{}}}"#,
            self.plan.page + 1,
            m.now_ms()
        );
        if ws.send(Message::Text(msg.into())).await.is_ok() {
            add(&m.counters.presence_sent, 1);
            add(&m.counters.messages_sent, 1);
        }
    }

    /// The next patch of the edit schedule: a move of this client's rectangle.
    pub(super) async fn send_patch(&self, c: &mut Connection, ws: &mut Socket, st: &mut State) {
        let m = &self.measures;
        let Some(s) = c.patches.as_mut() else { return };
        add(&m.counters.sends_skipped, s.advance(m.elapsed()));
        st.op_id += 1;
        let op_id = st.op_id;
        let (x, y) = cursor_at(self.plan.index + 7, op_id * 4);
        let extra = if self.track {
            format!(r#","{}":1"#, mark(self.plan.index, op_id))
        } else {
            String::new()
        };
        let ops = format!(
            r#"[{{"op":"set","id":"{}","props":{{"x":{x},"y":{y}{extra}}}}}]"#,
            self.plan.rect
        );
        let msg = format!(
            r#"{{"type":"patch","id":{op_id},"ops":{ops},"t":{}}}"#,
            m.now_ms()
        );
        if self.track {
            st.pending.insert(op_id, ops);
        }
        if ws.send(Message::Text(msg.into())).await.is_ok() {
            add(&m.counters.patches_sent, 1);
            add(&m.counters.messages_sent, 1);
        }
    }
}
