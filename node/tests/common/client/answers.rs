//! The node's answers a test waits for: acks, rejects, closes and quiet.

use super::*;

impl Client {
    /// Reads until the server closes, skipping messages; asserts the code.
    pub async fn expect_close_within(&mut self, code: u16, dur: Duration) {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_event(left).await {
                Event::Json(_) => continue,
                Event::Close(got) => {
                    assert_eq!(got, Some(code), "socket closed with the wrong code");
                    return;
                }
                other => {
                    panic!("expected a close frame with code {code} within {dur:?}, got {other:?}")
                }
            }
        }
    }

    pub async fn expect_close(&mut self, code: u16) {
        self.expect_close_within(code, WAIT).await;
    }

    /// Asserts that nothing but presence traffic arrives for `dur`.
    pub async fn expect_quiet(&mut self, dur: Duration) {
        if let Some(v) = self.recv_json_timeout(dur).await {
            panic!("expected no message, got {v}");
        }
    }

    /// Waits for the ack of op `id` (skipping relayed patches); returns its `v`.
    /// Panics on a reject.
    pub async fn await_ack(&mut self, id: u64) -> u64 {
        loop {
            let m = self.recv_json().await;
            match s(&m["type"]) {
                "ack" if m["id"] == json!(id) => {
                    return m["v"]
                        .as_u64()
                        .unwrap_or_else(|| panic!("ack without a numeric v: {m}"))
                }
                "patch" | "version" | "restored" => continue,
                _ => panic!("waiting for the ack of op {id}, got {m}"),
            }
        }
    }

    /// Sends a patch and waits for its ack; returns the version.
    pub async fn patch_acked(&mut self, id: u64, ops: Vec<Value>) -> u64 {
        self.send_patch(id, ops).await;
        self.await_ack(id).await
    }

    /// Waits for a reject of op `id` (or `null`); returns the message.
    pub async fn await_reject(&mut self, id: Value) -> Value {
        let m = self.recv_json().await;
        assert_eq!(m["type"], "reject", "expected a reject, got {m}");
        assert_eq!(m["id"], id, "reject for the wrong op: {m}");
        assert!(m["message"].is_string(), "reject without a message: {m}");
        m
    }

    /// Collects relayed `patch` messages until version `upto`; returns them
    /// by version. Panics on anything else than a patch.
    pub async fn collect_patches(&mut self, upto: u64) -> BTreeMap<u64, Value> {
        let mut got = BTreeMap::new();
        let mut last = 0;
        while last < upto {
            let m = self.recv_json().await;
            assert_eq!(m["type"], "patch", "expected a relayed patch, got {m}");
            let v = m["v"].as_u64().expect("patch v");
            assert!(v > last, "patch versions must increase: {v} after {last}");
            last = v;
            got.insert(v, m);
        }
        got
    }
}
