//! What a client hears: the next message or event, by type, or all within a span.

use super::*;

impl Client {
    /// The next thing on the socket, presence traffic included.
    pub async fn next_event(&mut self, dur: Duration) -> Event {
        let deadline = tokio::time::Instant::now() + dur;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return Event::Timeout,
                Ok(None) => return Event::Ended,
                Ok(Some(Err(e))) => return Event::Error(e.to_string()),
                Ok(Some(Ok(msg))) => match msg {
                    Message::Text(t) => {
                        let v: Value = serde_json::from_str(t.as_str()).unwrap_or_else(|e| {
                            panic!("server sent a text frame that is not JSON ({e}): {t}")
                        });
                        assert!(
                            v.get("type").and_then(Value::as_str).is_some(),
                            "server message without a string `type`: {v}"
                        );
                        return Event::Json(v);
                    }
                    Message::Binary(b) => {
                        panic!("server sent a binary frame ({} bytes)", b.len())
                    }
                    Message::Close(frame) => return Event::Close(frame.map(|f| u16::from(f.code))),
                    Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
                },
            }
        }
    }

    /// The next event that is not presence traffic.
    pub async fn next_non_presence(&mut self, dur: Duration) -> Event {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_event(left).await {
                Event::Json(v) if PRESENCE_TYPES.contains(&s(&v["type"])) => continue,
                other => return other,
            }
        }
    }

    /// The next non-presence message within `dur`, or None on timeout.
    /// Panics on a close or a broken socket.
    pub async fn recv_json_timeout(&mut self, dur: Duration) -> Option<Value> {
        match self.next_non_presence(dur).await {
            Event::Json(v) => Some(v),
            Event::Timeout => None,
            other => panic!("expected a message, socket gave {other:?}"),
        }
    }

    /// The next non-presence message, within [`WAIT`].
    pub async fn recv_json(&mut self) -> Value {
        self.recv_json_timeout(WAIT)
            .await
            .expect("no message within the deadline")
    }

    /// The next message of any type (presence traffic included) within
    /// `dur`, or None on timeout. Panics on a close or a broken socket.
    pub async fn recv_any_timeout(&mut self, dur: Duration) -> Option<Value> {
        match self.next_event(dur).await {
            Event::Json(v) => Some(v),
            Event::Timeout => None,
            other => panic!("expected a message, socket gave {other:?}"),
        }
    }

    /// The next message of type `ty` within `dur`, skipping every other
    /// message; None on timeout. Panics on a close or a broken socket.
    pub async fn recv_type(&mut self, ty: &str, dur: Duration) -> Option<Value> {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.recv_any_timeout(left).await?;
            if v["type"] == ty {
                return Some(v);
            }
        }
    }

    /// Every message (presence traffic included) that arrives within `dur`.
    /// Panics on a close or a broken socket.
    pub async fn collect_for(&mut self, dur: Duration) -> Vec<Value> {
        // No gap is longer than the whole span: reading stops at its end.
        self.drain_until_quiet(dur, dur).await
    }

    /// Reads until nothing has arrived for `quiet` (at most `max` in all);
    /// returns what came.
    pub async fn drain_until_quiet(&mut self, quiet: Duration, max: Duration) -> Vec<Value> {
        let deadline = Instant::now() + max;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return got;
            }
            match self.recv_any_timeout(quiet.min(left)).await {
                Some(v) => got.push(v),
                None => return got,
            }
        }
    }

    /// The raw text of the next text frame within `dur`, or None on timeout.
    /// Panics on a close or a broken socket.
    pub async fn next_text(&mut self, dur: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + dur;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return None,
                Ok(Some(Ok(Message::Text(t)))) => return Some(t.as_str().to_string()),
                Ok(Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)))) => continue,
                Ok(other) => panic!("expected a text frame, socket gave {other:?}"),
            }
        }
    }
}
