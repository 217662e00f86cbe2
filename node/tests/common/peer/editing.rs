//! A peer editing: sending patches, reading what comes, riding through disconnections.

use super::*;

impl Peer {
    /// Resends every unconfirmed patch, in order, with its original op id.
    pub(super) async fn resend(&mut self) {
        let pending: Vec<(u64, Vec<Value>)> = self
            .unacked
            .iter()
            .map(|(id, ops)| (*id, ops.clone()))
            .collect();
        for (id, ops) in pending {
            if !self.send_raw(patch_msg(id, ops)).await {
                return;
            }
        }
    }

    pub(super) async fn send_raw(&mut self, msg: Value) -> bool {
        let Some(c) = self.ws.as_mut() else {
            return false;
        };
        let sent = tokio::time::timeout(WAIT, c.ws.send(Message::text(msg.to_string()))).await;
        if !matches!(sent, Ok(Ok(()))) {
            // The read side reports how it ended.
            return false;
        }
        true
    }

    /// Sends a new patch: a node of its own (so acked edits can be found in
    /// the document) and a prop of a shared node (last writer wins).
    pub async fn edit(&mut self) -> u64 {
        self.next_op += 1;
        let id = self.next_op;
        let ops = vec![
            put(&self.edit_node(id), json!({"by": self.label, "n": id})),
            put("shared", json!({"last": format!("{}-{id}", self.label)})),
        ];
        self.unacked.insert(id, ops.clone());
        self.send_raw(patch_msg(id, ops)).await;
        id
    }

    /// Reads for up to `dur`, applying what comes. Returns false when the
    /// socket ended (its close code recorded; the caller reconnects).
    pub async fn pump(&mut self, dur: Duration) -> bool {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(c) = self.ws.as_mut() else {
                return false;
            };
            match c.next_event(left).await {
                Event::Json(m) => self.take(&m),
                Event::Timeout => return true,
                Event::Close(code) => {
                    self.closed(code.unwrap_or(0));
                    return false;
                }
                Event::Ended | Event::Error(_) => {
                    self.closed(0);
                    return false;
                }
            }
        }
    }

    /// Reads (reconnecting when needed) until `cond` holds; panics after
    /// `dur`.
    pub async fn pump_until(
        &mut self,
        dir: &Directory,
        dur: Duration,
        what: &str,
        cond: impl Fn(&Peer) -> bool,
    ) {
        let deadline = Instant::now() + dur;
        while !cond(self) {
            assert!(
                Instant::now() < deadline,
                "peer {} of {}: {what} did not happen within {dur:?} (at {:?}, v{}, {} unacked, closes {:?})",
                self.label,
                self.file,
                self.at,
                self.version,
                self.unacked.len(),
                self.closes.iter().map(|c| c.1).collect::<Vec<_>>()
            );
            if self.ws.is_none() {
                self.connect(
                    dir,
                    None,
                    deadline.saturating_duration_since(Instant::now()),
                )
                .await;
                continue;
            }
            self.pump(Duration::from_millis(50)).await;
        }
    }

    /// Edits every `every` until `stop`, riding through every disconnection;
    /// then waits until every patch it sent is acked.
    pub async fn run(
        mut self,
        dir: Directory,
        every: Duration,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> Peer {
        use std::sync::atomic::Ordering;
        let mut next = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            if self.ws.is_none() {
                self.connect(&dir, None, Duration::from_secs(30)).await;
                continue;
            }
            if Instant::now() >= next {
                self.edit().await;
                next += every;
                if next < Instant::now() {
                    next = Instant::now() + every;
                }
            }
            let wait = next.saturating_duration_since(Instant::now());
            self.pump(wait.min(Duration::from_millis(100))).await;
        }
        self.pump_until(&dir, Duration::from_secs(30), "every patch acked", |p| {
            p.unacked.is_empty()
        })
        .await;
        self
    }
}
