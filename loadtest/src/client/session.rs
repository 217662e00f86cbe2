//! One connection, from its welcome until the run or the server ends it.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::{self, Message};

use super::messages::Welcome;
use super::state::State;
use super::{Client, End, Ended, Socket, Versions};
use crate::measure::add;
use crate::schedule::{self, Schedule};

/// What one connection knows and schedules, from its welcome to its end.
pub(super) struct Connection {
    /// Our person id in the file.
    pub(super) me: String,
    pub(super) asked_edit: bool,
    /// Whether we hold an editor seat now.
    pub(super) editing: bool,
    pub(super) versions: Versions,
    /// Where in its period this client's presence falls.
    pub(super) phase: f64,
    pub(super) presence: Option<Schedule>,
    pub(super) patches: Option<Schedule>,
    /// Cursor moves sent.
    pub(super) step: u64,
    pub(super) presence_seen: u64,
}

impl Client {
    /// One connection, from its welcome until the run or the server ends it.
    pub(super) async fn session(
        &mut self,
        ws: &mut Socket,
        welcome: Welcome,
        st: &mut State,
    ) -> Ended {
        let m = self.measures.clone();
        let mut c = self.connection(welcome);
        if c.editing {
            self.resend_pending(ws, st).await;
        }
        let mut sending = true;
        let origin = Instant::from_std(m.origin());
        let never = origin + Duration::from_secs(86_400 * 365);
        let due = |s: &Option<Schedule>, on: bool| match s {
            Some(s) if on => origin + s.due(),
            _ => never,
        };

        // One timer for both schedules, moved only when the next send time changes, and one
        // wait for the end signal, renewed only when it fires: making new ones on every message
        // received put the timer wheel high in the generator's own profile.
        let mut armed = never;
        let timer = tokio::time::sleep_until(armed);
        tokio::pin!(timer);
        let mut end_wait = Box::pin(next_end(self.end.clone()));
        loop {
            let (presence_due, patch_due) = (
                due(&c.presence, sending),
                due(&c.patches, c.editing && sending),
            );
            let next = presence_due.min(patch_due);
            if next != armed {
                timer.as_mut().reset(next);
                armed = next;
            }
            tokio::select! {
                biased;
                (rx, changed) = &mut end_wait => {
                    let now_end = *rx.borrow();
                    end_wait = Box::pin(next_end(rx));
                    match now_end {
                        _ if !changed => return Ended::Run(End::Close),
                        End::Running => {}
                        End::Quiet => sending = false,
                        End::Close | End::Drop => return Ended::Run(now_end),
                    }
                }
                frame = ws.next() => {
                    if let Some(ended) = self.frame(&mut c, frame, ws, st).await {
                        return ended;
                    }
                }
                _ = &mut timer => {
                    // Fired: re-arm on the next turn even if nothing below moves a schedule.
                    armed = never;
                    let fired = Instant::now();
                    if presence_due <= fired {
                        self.send_presence(&mut c, ws).await;
                    }
                    if patch_due <= fired {
                        self.send_patch(&mut c, ws, st).await;
                    }
                }
            }
        }
    }

    /// A frame from the node; the connection's end when it closed or was lost.
    async fn frame(
        &self,
        c: &mut Connection,
        frame: Option<Result<Message, tungstenite::Error>>,
        ws: &mut Socket,
        st: &mut State,
    ) -> Option<Ended> {
        match frame {
            Some(Ok(Message::Text(text))) => self.received(c, text.as_str(), st),
            Some(Ok(Message::Close(close))) => {
                let code = close.map_or(1005, |c| u16::from(c.code));
                self.count_close(&code.to_string());
                // Answer the close at once, as browsers do (the reply is queued;
                // flushing sends it), so the node is not left waiting for it.
                let _ = ws.flush().await;
                return Some(Ended::Lost);
            }
            Some(Ok(_)) => {}
            Some(Err(_)) | None => {
                if self.run_going() {
                    self.count_close("1006");
                }
                return Some(Ended::Lost);
            }
        }
        None
    }

    /// A connection's own state, from its welcome.
    fn connection(&self, welcome: Welcome) -> Connection {
        let m = &self.measures;
        let asked_edit = self.plan.editor;
        let editing = asked_edit && welcome.role == "editor";
        if asked_edit && !editing {
            add(&m.counters.joined_as_viewer, 1);
        }
        let phase = schedule::phase(self.plan.index, 0.0);
        let now = m.elapsed();
        let presence_hz = schedule::presence_rate(self.presence_rate, welcome.presence_hz);
        Connection {
            me: welcome.you,
            asked_edit,
            editing,
            versions: Versions {
                last: welcome.version,
            },
            phase,
            presence: Schedule::new(now, presence_hz, phase),
            patches: Schedule::new(now, self.edit_rate, schedule::phase(self.plan.index, 0.5)),
            step: 0,
            presence_seen: 0,
        }
    }
}

/// Waits for the run's next end signal; gives the receiver back, and false when the run is gone.
async fn next_end(mut rx: watch::Receiver<End>) -> (watch::Receiver<End>, bool) {
    let changed = rx.changed().await.is_ok();
    (rx, changed)
}
