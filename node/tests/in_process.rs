//! Two nodes in one process: each started with `atrium_node::start(config,
//! shutdown)`, each with its own store, listeners and metrics, stopped on its own.

use std::time::Duration;

use atrium_testkit::env::secret;
use atrium_testkit::http::{request, Resp};
use clap::Parser;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(10);

struct InProcess {
    port: u16,
    admin: u16,
    stop: Option<oneshot::Sender<()>>,
    running: Option<atrium_node::Running>,
    _data: tempfile::TempDir,
}

impl InProcess {
    async fn start(id: &str) -> InProcess {
        let data = tempfile::tempdir().expect("a data folder");
        let config = atrium_node::NodeConfig::parse_from([
            "atrium-node".to_string(),
            "--bind=127.0.0.1:0".into(),
            "--admin-bind=127.0.0.1:0".into(),
            format!("--data={}", data.path().display()),
            format!("--node-id={id}"),
            "--argon2-memory-kib=1024".into(),
            "--argon2-iterations=1".into(),
        ]);
        let (stop, stopped) = oneshot::channel::<()>();
        let running = atrium_node::start(config, async move {
            let _ = stopped.await;
        })
        .await
        .expect("the node starts");
        InProcess {
            port: running.addr.port(),
            admin: running.admin_addr.expect("an admin address").port(),
            stop: Some(stop),
            running: Some(running),
            _data: data,
        }
    }

    /// Stops the node and waits until it has finished.
    async fn stop(&mut self) {
        let _ = self.stop.take().expect("running").send(());
        let running = self.running.take().expect("running");
        tokio::time::timeout(Duration::from_secs(30), running.wait())
            .await
            .expect("the node stops within 30 s");
    }

    async fn json(&self, method: &str, path: &str, token: Option<&str>, body: Value) -> Resp {
        let auth = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        request(
            self.port,
            method,
            path,
            &headers,
            Some(body.to_string().into_bytes()),
        )
        .await
    }

    /// A new account and a file of its own: (token, file id).
    async fn account_and_file(&self) -> (String, String) {
        let email = format!("p-{}@example.test", &secret()[..10]);
        let signup =
            json!({"email": email, "password": "correct horse battery staple", "name": "P"});
        let r = self.json("POST", "/api/signup", None, signup).await;
        r.assert_status(201);
        let token = r.body()["token"].as_str().expect("a token").to_string();
        let r = self
            .json("POST", "/api/files", Some(&token), json!({"name": "F"}))
            .await;
        r.assert_status(201);
        let file = r.body()["id"].as_str().expect("an id").to_string();
        (token, file)
    }

    /// Joins the file, sends one patch, and returns its acked version.
    async fn edit(&self, token: &str, file: &str, op_id: u64) -> u64 {
        let url = format!("ws://127.0.0.1:{}/files/{file}/ws", self.port);
        let (mut ws, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url))
            .await
            .expect("connect in time")
            .expect("connect");
        let hello = json!({"type": "hello", "token": token, "client": secret()});
        let patch = json!({"type": "patch", "id": op_id, "ops": [{"op": "put", "id": format!("s{op_id}"), "props": {}}]});
        ws.send(Message::text(hello.to_string()))
            .await
            .expect("hello");
        ws.send(Message::text(patch.to_string()))
            .await
            .expect("patch");
        loop {
            let msg = tokio::time::timeout(WAIT, ws.next())
                .await
                .expect("an answer in time")
                .expect("the socket stays open")
                .expect("a message");
            let Message::Text(text) = msg else { continue };
            let m: Value = serde_json::from_str(&text).expect("JSON");
            if m["type"] == "ack" {
                let _ = ws.close(None).await;
                return m["v"].as_u64().expect("a version");
            }
        }
    }

    /// A metric's value on this node's admin address (panics when missing).
    async fn metric(&self, name: &str) -> f64 {
        let r = request(self.admin, "GET", "/metrics", &[], None).await;
        r.assert_status(200);
        r.text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} is not exported"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_live_in_one_process_each_with_its_own_metrics() {
    let mut a = InProcess::start("a").await;
    let mut b = InProcess::start("b").await;
    assert_ne!(a.port, b.port);

    let (token, file) = a.account_and_file().await;
    assert_eq!(a.edit(&token, &file, 1).await, 1);
    assert_eq!(a.edit(&token, &file, 2).await, 2);
    // Each node counts only its own work: b has acked nothing and opened no room.
    assert_eq!(a.metric("atrium_patches_acked_total").await, 2.0);
    assert_eq!(b.metric("atrium_patches_acked_total").await, 0.0);
    assert_eq!(a.metric("atrium_rooms").await, 1.0);
    assert_eq!(b.metric("atrium_rooms").await, 0.0);
    // Their stores are apart: a's account does not exist on b.
    let r = b
        .json("POST", "/api/files", Some(&token), json!({"name": "F"}))
        .await;
    r.assert_status(401);

    // Stopping a leaves b serving.
    a.stop().await;
    assert!(
        atrium_testkit::http::try_request(a.port, "GET", "/health", &[], None)
            .await
            .is_none(),
        "a stopped listening"
    );
    let (token, file) = b.account_and_file().await;
    assert_eq!(b.edit(&token, &file, 1).await, 1);
    assert_eq!(b.metric("atrium_patches_acked_total").await, 1.0);
    b.stop().await;
}
