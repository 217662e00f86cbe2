//! Helpers for the router's whole-process tests: `atrium-node` processes sharing a Postgres
//! database and a coordinator namespace, `atrium-router` processes in front of them, and small
//! HTTP and WebSocket clients. Every wait has a deadline; a missing service fails the test.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const WAIT: Duration = Duration::from_secs(10);
pub const LEASE_MS: u64 = 3_000;
pub const PASSWORD: &str = "correct horse battery staple";

/// Cluster tests run one at a time: each starts five processes on a small machine.
pub async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

pub use atrium_testkit::env::{free_port, secret, service_env};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The `atrium-node` binary, built once per test run (`cargo build -p atrium-node`).
pub fn node_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(bin) = std::env::var("ATRIUM_NODE_BIN") {
            return PathBuf::from(bin);
        }
        let target = std::env::var("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| workspace().join("target"));
        let bin = target.join("debug").join("atrium-node");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "atrium-node", "--bin", "atrium-node"])
            .current_dir(workspace())
            .status();
        match status {
            Ok(s) if s.success() => {}
            other if bin.exists() => {
                eprintln!(
                    "`cargo build -p atrium-node` failed ({other:?}); using the existing binary"
                )
            }
            other => panic!("cannot build atrium-node ({other:?}) and {bin:?} does not exist"),
        }
        bin
    })
    .clone()
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

pub use atrium_testkit::process::Proc;

pub use atrium_testkit::postgres::TestDatabase;

/// One `atrium-node`.
pub struct NodeProc {
    pub id: String,
    pub port: u16,
    pub proc: Proc,
    _data: PathBuf,
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        self.proc.kill9();
        let _ = std::fs::remove_dir_all(&self._data);
    }
}

/// One `atrium-router`.
pub struct RouterProc {
    pub port: u16,
    pub admin: u16,
    pub proc: Proc,
}

/// Nodes and routers sharing one database and one coordinator namespace.
/// Fields drop in order: routers, nodes, then the database.
pub struct Fleet {
    pub routers: Vec<RouterProc>,
    pub nodes: Vec<NodeProc>,
    pub coordinator: String,
    pub db: TestDatabase,
}

impl Fleet {
    /// `nodes` nodes (`n0`...) and `routers` routers on the suite's NATS server.
    pub async fn start(nodes: usize, routers: usize) -> Fleet {
        Fleet::start_on("ATRIUM_TEST_NATS_URL", nodes, routers).await
    }

    /// Like [`Fleet::start`], on the coordinator server the variable `server_env` names.
    pub async fn start_on(server_env: &str, nodes: usize, routers: usize) -> Fleet {
        let nats = service_env(server_env);
        let db = TestDatabase::create().await;
        let coordinator = format!(
            "{}?namespace=rt{}",
            nats.trim().trim_end_matches('/'),
            &secret()[..20]
        );
        let mut fleet = Fleet {
            routers: Vec::new(),
            nodes: Vec::new(),
            coordinator,
            db,
        };
        // The first node applies the migrations alone.
        fleet.add_node().await;
        for _ in 1..nodes {
            fleet.add_node().await;
        }
        for _ in 0..routers {
            fleet.add_router(&[]).await;
        }
        for r in 0..routers {
            fleet.wait_members(r, nodes).await;
        }
        fleet
    }

    pub async fn add_node(&mut self) -> usize {
        let id = format!("n{}", self.nodes.len());
        let data = std::env::temp_dir().join(format!("atrium-rt-{}", secret()));
        std::fs::create_dir_all(&data).expect("data dir");
        let mut cmd = Command::new(node_bin());
        cmd.arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--data")
            .arg(&data)
            .env(
                "ATRIUM_LOG",
                std::env::var("ATRIUM_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("ATRIUM_NODE_ID", &id)
            .env("ATRIUM_DATABASE_URL", &self.db.url)
            .env("ATRIUM_COORDINATOR", &self.coordinator)
            .env("ATRIUM_LEASE_MS", LEASE_MS.to_string())
            .env("ATRIUM_DATABASE_POOL", "4")
            .env("ATRIUM_TRUST_PROXY", "127.0.0.1")
            .env("ATRIUM_WS_PER_IP", "100000")
            .env("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND", "0")
            .env("ATRIUM_WS_PER_ACCOUNT", "1000")
            .env("ATRIUM_WS_PER_SECOND", "100000")
            .env("ATRIUM_AUTH_PER_IP_PER_MINUTE", "1000")
            .env("ATRIUM_ARGON2_MEMORY_KIB", "1024")
            .env("ATRIUM_ARGON2_ITERATIONS", "1");
        let mut proc = Proc::spawn(&format!("atrium-node {id}"), cmd);
        let rest = proc
            .wait_line("listening on http://", Duration::from_secs(30))
            .await;
        let hostport: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':'))
            .collect();
        let port = hostport
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("node port");
        self.nodes.push(NodeProc {
            id,
            port,
            proc,
            _data: data,
        });
        self.nodes.len() - 1
    }

    pub async fn add_router(&mut self, extra: &[(&str, &str)]) -> usize {
        let (port, admin) = (free_port(), free_port());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_atrium-router"));
        cmd.env("ATRIUM_ROUTER_BIND", format!("127.0.0.1:{port}"))
            .env("ATRIUM_ROUTER_ADMIN_BIND", format!("127.0.0.1:{admin}"))
            .env("ATRIUM_COORDINATOR", &self.coordinator)
            .env("ATRIUM_LEASE_MS", LEASE_MS.to_string())
            .env("ATRIUM_LOG", "info");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let n = self.routers.len();
        let proc = Proc::spawn(&format!("atrium-router {n}"), cmd);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(r) = try_http(admin, "GET", "/health", &[], None).await {
                if r.status == 200 {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "router {n} never answered /health:\n{}",
                proc.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.routers.push(RouterProc { port, admin, proc });
        n
    }

    pub fn node(&self, id: &str) -> &NodeProc {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    pub fn node_mut(&mut self, id: &str) -> &mut NodeProc {
        self.nodes
            .iter_mut()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    /// Waits until router `r` routes to exactly `count` live members.
    pub async fn wait_members(&self, r: usize, count: usize) {
        let deadline = Instant::now() + Duration::from_millis(LEASE_MS * 4);
        loop {
            let h = http_at(self.routers[r].admin, "GET", "/health", &[], None).await;
            if h.body()["ring"] == json!(count) && h.body()["members"] == json!(count) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "router {r} never saw {count} members: {}\n{}",
                h.text,
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Which node serves `file` now: the one answering its `GET /api/files/{id}` itself
    /// (the others answer 409 `moved`).
    pub async fn serving(&self, token: &str, file: &str) -> Option<String> {
        for n in &self.nodes {
            if n.proc.exited().is_some() {
                continue;
            }
            let r = try_http(
                n.port,
                "GET",
                &format!("/api/files/{file}"),
                &[("authorization", &format!("Bearer {token}"))],
                None,
            )
            .await?;
            if r.status == 409 {
                return r.body()["error"]["node"].as_str().map(str::to_string);
            }
        }
        None
    }

    pub fn logs(&self) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            out.push_str(&format!("===== node {} =====\n{}\n", n.id, n.proc.log()));
        }
        for (i, r) in self.routers.iter().enumerate() {
            out.push_str(&format!("===== router {i} =====\n{}\n", r.proc.log()));
        }
        out
    }
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

pub use atrium_testkit::http::Resp;

/// One request on a fresh connection, with a JSON body; `None` when the connection fails.
pub async fn try_http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Option<Resp> {
    let body = body.map(|b| b.to_string().into_bytes());
    atrium_testkit::http::try_request(port, method, path, headers, body).await
}

pub async fn http_at(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Resp {
    let body = body.map(|b| b.to_string().into_bytes());
    atrium_testkit::http::request(port, method, path, headers, body).await
}

/// Signs up an account through `port`; its token.
pub async fn account(port: u16) -> String {
    let email = format!("rt-{}@example.test", &secret()[..12]);
    let r = http_at(
        port,
        "POST",
        "/api/signup",
        &[],
        Some(json!({"email": email, "password": PASSWORD, "name": "Router Test"})),
    )
    .await;
    r.assert_status(201);
    r.body()["token"].as_str().expect("token").to_string()
}

/// Creates a file through `port`; its id.
pub async fn create_file(port: u16, token: &str) -> String {
    let r = http_at(
        port,
        "POST",
        "/api/files",
        &[("authorization", &format!("Bearer {token}"))],
        Some(json!({"name": "Routed board"})),
    )
    .await;
    r.assert_status(201);
    r.body()["id"].as_str().expect("file id").to_string()
}

/// `GET /api/files/{id}/doc` through `port`: (version, doc).
pub async fn get_doc(port: u16, token: &str, file: &str) -> (u64, Value) {
    let r = http_at(
        port,
        "GET",
        &format!("/api/files/{file}/doc"),
        &[("authorization", &format!("Bearer {token}"))],
        None,
    )
    .await;
    r.assert_status(200);
    (
        r.body()["version"].as_u64().expect("version"),
        r.body()["doc"].clone(),
    )
}

// ---------------------------------------------------------------------------
// Sockets
// ---------------------------------------------------------------------------

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// One person's socket to a file.
pub struct Client {
    pub ws: Ws,
    pub client: String,
    /// The highest version seen (welcome, acks, relayed patches).
    pub version: u64,
}

/// What came out of a socket.
#[derive(Debug)]
pub enum Event {
    Json(Value),
    Close(Option<u16>),
    Ended,
    Timeout,
}

impl Client {
    /// Opens the socket through `port`, says hello, waits for the welcome. `None` when the
    /// upgrade fails or the node closes the socket before welcoming (e.g. 4009).
    pub async fn try_join(
        port: u16,
        file: &str,
        token: &str,
        client: &str,
        since: Option<u64>,
    ) -> Option<Client> {
        let url = format!("ws://127.0.0.1:{port}/files/{file}/ws");
        let (ws, _) = match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(url)).await
        {
            Ok(Ok(ok)) => ok,
            other => {
                eprintln!("upgrade of {file} through port {port} failed: {other:?}");
                return None;
            }
        };
        let mut c = Client {
            ws,
            client: client.to_string(),
            version: 0,
        };
        let hello = json!({"type": "hello", "token": token, "client": client, "since": since});
        c.ws.send(Message::text(hello.to_string())).await.ok()?;
        loop {
            match c.next(WAIT).await {
                Event::Json(v) if v["type"] == "welcome" => {
                    c.version = v["version"].as_u64().unwrap_or(0);
                    if let Some(resume) = v["resume"].as_array() {
                        for p in resume {
                            c.version = c.version.max(p["v"].as_u64().unwrap_or(0));
                        }
                    }
                    return Some(c);
                }
                Event::Json(_) => continue,
                other => {
                    eprintln!(
                        "join of {file} through port {port} ended before a welcome: {other:?}"
                    );
                    return None;
                }
            }
        }
    }

    pub async fn join(port: u16, file: &str, token: &str) -> Client {
        Client::try_join(port, file, token, &secret(), None)
            .await
            .unwrap_or_else(|| panic!("could not join {file} through port {port}"))
    }

    /// Joins again (same client id, resuming) until welcomed, within `patience`.
    pub async fn rejoin(
        ports: &[u16],
        file: &str,
        token: &str,
        client: &str,
        since: u64,
        patience: Duration,
    ) -> Client {
        let deadline = Instant::now() + patience;
        let mut i = 0;
        loop {
            let port = ports[i % ports.len()];
            i += 1;
            if let Some(c) = Client::try_join(port, file, token, client, Some(since)).await {
                return c;
            }
            assert!(
                Instant::now() < deadline,
                "could not rejoin {file} within {patience:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn next(&mut self, within: Duration) -> Event {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return Event::Timeout,
                Ok(None) | Ok(Some(Err(_))) => return Event::Ended,
                Ok(Some(Ok(Message::Text(t)))) => {
                    let v: Value = serde_json::from_str(t.as_str()).expect("JSON from the server");
                    if let Some(n) = v["v"].as_u64() {
                        self.version = self.version.max(n);
                    }
                    return Event::Json(v);
                }
                Ok(Some(Ok(Message::Close(frame)))) => {
                    return Event::Close(frame.map(|f| u16::from(f.code)))
                }
                Ok(Some(Ok(_))) => continue,
            }
        }
    }

    pub async fn send_patch(&mut self, id: u64, key: &str, value: Value) {
        let msg = json!({"type": "patch", "id": id, "ops": [
            {"op": "put", "id": key, "props": {"type": "rect", "x": value}}
        ]});
        self.ws
            .send(Message::text(msg.to_string()))
            .await
            .expect("send a patch");
    }

    /// Waits for a message of `ty` (for `ack`, with `id`), skipping others.
    pub async fn expect(&mut self, ty: &str, id: Option<u64>, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Event::Json(v) if v["type"] == ty && id.is_none_or(|i| v["id"] == json!(i)) => {
                    return v
                }
                Event::Json(_) => continue,
                other => panic!("waiting for {ty}: got {other:?}"),
            }
        }
    }
}
