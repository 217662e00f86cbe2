//! What a client sends: frames, patches, presence, and its close.

use super::*;

impl Client {
    pub async fn send_msg(&mut self, msg: Message) {
        tokio::time::timeout(WAIT, self.ws.send(msg))
            .await
            .expect("websocket send timed out")
            .expect("websocket send failed");
    }

    pub async fn send_text(&mut self, text: String) {
        self.send_msg(Message::text(text)).await;
    }

    pub async fn send_json(&mut self, v: &Value) {
        self.send_text(v.to_string()).await;
    }

    pub async fn send_patch(&mut self, id: u64, ops: Vec<Value>) {
        self.send_json(&patch_msg(id, ops)).await;
    }

    /// Sends a `presence` message made of `fields` (the type is added).
    pub async fn send_presence(&mut self, fields: Value) {
        let mut msg = fields;
        msg["type"] = json!("presence");
        self.send_json(&msg).await;
    }

    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.ws.close(None)).await;
        // Read until the server's close answer (or a deadline) so the
        // server sees a clean close before anything else happens.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while let Ok(Some(Ok(_))) = tokio::time::timeout_at(deadline, self.ws.next()).await {}
    }
}
