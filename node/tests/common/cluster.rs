//! Clusters: several node processes sharing a Postgres database and a coordinator.

use super::*;

/// Generates `mod NAME { fn nats(); fn redis() }`, two tests running
/// `NAME(Backend::...)`, so every cluster test runs against both coordinators.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nats() {
                super::$name($crate::common::Backend::Nats).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$name($crate::common::Backend::Redis).await
            }
        }
    )*};
}

/// Which coordinator a cluster uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Nats,
    Redis,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Nats => "nats",
            Backend::Redis => "redis",
        }
    }

    /// The suite's shared server of this kind.
    pub fn shared_url(self) -> String {
        match self {
            Backend::Nats => service_env("ATRIUM_TEST_NATS_URL"),
            Backend::Redis => service_env("ATRIUM_TEST_REDIS_URL"),
        }
    }
}

/// A coordinator URL with a fresh namespace, so parallel tests never meet.
pub fn namespaced(server: &str) -> String {
    let base = server.trim().trim_end_matches('/');
    format!("{base}?namespace=ct{}", &secret()[..20])
}

pub use atrium_testkit::postgres::TestDatabase;

/// One node of a cluster as clients see it.
#[derive(Clone, Debug)]
pub struct Member {
    pub id: String,
    pub port: u16,
    /// Live and taking work: what the router would route to.
    pub up: bool,
}

/// The nodes of a cluster, shared with client tasks: the router's view.
#[derive(Clone, Default)]
pub struct Directory(Arc<Mutex<Vec<Member>>>);

impl Directory {
    pub fn members(&self) -> Vec<Member> {
        self.0.lock().unwrap().clone()
    }

    fn set_up(&self, id: &str, up: bool) {
        for m in self.0.lock().unwrap().iter_mut() {
            if m.id == id {
                m.up = up;
            }
        }
    }

    fn set_port(&self, id: &str, port: u16) {
        for m in self.0.lock().unwrap().iter_mut() {
            if m.id == id {
                m.port = port;
            }
        }
    }

    fn push(&self, member: Member) {
        self.0.lock().unwrap().push(member);
    }

    pub fn port_of(&self, id: &str) -> u16 {
        self.members()
            .into_iter()
            .find(|m| m.id == id)
            .unwrap_or_else(|| panic!("no node {id} in the cluster"))
            .port
    }

    /// The node the consistent hash ring of the up members picks for `file`.
    pub fn owner(&self, file: &str) -> String {
        self.order(file)
            .first()
            .map(|m| m.id.clone())
            .expect("no node is up")
    }

    /// Up members in the order a router tries them for `file`: the ring owner
    /// first.
    pub fn order(&self, file: &str) -> Vec<Member> {
        let members = self.members();
        let up: Vec<atrium_coordinator::NodeId> = members
            .iter()
            .filter(|m| m.up)
            .map(|m| atrium_coordinator::NodeId::parse(&m.id).expect("node id"))
            .collect();
        let ring = atrium_coordinator::Ring::new(up.iter());
        ring.candidates(file)
            .filter_map(|id| members.iter().find(|m| m.id == id.as_str()).cloned())
            .collect()
    }
}

/// Where a file's owner would be with a given set of node ids.
pub fn ring_owner(ids: &[&str], file: &str) -> String {
    let ids: Vec<atrium_coordinator::NodeId> = ids
        .iter()
        .map(|id| atrium_coordinator::NodeId::parse(id).expect("node id"))
        .collect();
    atrium_coordinator::Ring::new(ids.iter())
        .owner(file)
        .expect("empty ring")
        .as_str()
        .to_string()
}

/// Several `atrium-node` processes sharing a database and a coordinator.
/// Fields drop in order: the nodes first, then the database.
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub ids: Vec<String>,
    pub dir: Directory,
    pub coordinator: String,
    pub lease_ms: u64,
    envs: Vec<(String, String)>,
    pub db: TestDatabase,
}

impl Cluster {
    /// `count` nodes (`n0`, `n1`, ...) on the suite's server of `backend`,
    /// with a fresh database and namespace.
    pub async fn start(
        backend: Backend,
        count: usize,
        lease_ms: u64,
        extra: &[(&str, &str)],
    ) -> Cluster {
        Cluster::start_on(&backend.shared_url(), count, lease_ms, extra).await
    }

    /// Like [`Cluster::start`], on a given coordinator server URL.
    pub async fn start_on(
        server: &str,
        count: usize,
        lease_ms: u64,
        extra: &[(&str, &str)],
    ) -> Cluster {
        let db = TestDatabase::create().await;
        let coordinator = namespaced(server);
        let mut envs: Vec<(String, String)> = vec![
            ("ATRIUM_DATABASE_URL".into(), db.url.clone()),
            ("ATRIUM_COORDINATOR".into(), coordinator.clone()),
            ("ATRIUM_LEASE_MS".into(), lease_ms.to_string()),
            ("ATRIUM_DATABASE_POOL".into(), "4".into()),
            ("ATRIUM_WS_PER_IP".into(), "100000".into()),
            ("ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND".into(), "0".into()),
            ("ATRIUM_AUTH_PER_IP_PER_MINUTE".into(), "1000".into()),
            ("ATRIUM_ARGON2_MEMORY_KIB".into(), "1024".into()),
            ("ATRIUM_ARGON2_ITERATIONS".into(), "1".into()),
        ];
        for (k, v) in extra {
            envs.retain(|(key, _)| key != k);
            envs.push((k.to_string(), v.to_string()));
        }
        let mut cluster = Cluster {
            nodes: Vec::new(),
            ids: Vec::new(),
            dir: Directory::default(),
            coordinator,
            lease_ms,
            envs,
            db,
        };
        // The first node alone applies the migrations; the rest start together.
        cluster.add_node().await;
        let ids: Vec<String> = (1..count).map(|i| format!("n{i}")).collect();
        let starts = ids.iter().map(|id| cluster.spawn_node(id));
        let started = futures_util::future::join_all(starts).await;
        for (id, node) in ids.into_iter().zip(started) {
            cluster.register(id, node);
        }
        // Every node sees every other before files are opened, so no ring change
        // moves them afterwards.
        for node in &cluster.nodes {
            wait_metric(
                node,
                "atrium_ring_members",
                &[],
                |n| n == count as f64,
                Duration::from_millis(lease_ms * 10),
            )
            .await;
        }
        cluster
    }

    async fn spawn_node(&self, id: &str) -> Node {
        let mut envs: Vec<(&str, &str)> = self
            .envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        envs.push(("ATRIUM_NODE_ID", id));
        Node::start(&envs).await
    }

    fn register(&mut self, id: String, node: Node) {
        if self.dir.members().iter().any(|m| m.id == id) {
            self.dir.set_port(&id, node.port);
        } else {
            self.dir.push(Member {
                id: id.clone(),
                port: node.port,
                up: true,
            });
        }
        self.ids.push(id);
        self.nodes.push(node);
    }

    /// Starts one more node (`n<count>`); returns its index. It is on the
    /// directory's ring from the start, as the nodes learn of it from its
    /// first heartbeat, before its start is reported here (clients sent to
    /// it meanwhile wait).
    pub async fn add_node(&mut self) -> usize {
        let id = format!("n{}", self.nodes.len());
        self.dir.push(Member {
            id: id.clone(),
            port: 0,
            up: true,
        });
        let node = self.spawn_node(&id).await;
        self.register(id, node);
        self.nodes.len() - 1
    }

    pub fn index(&self, id: &str) -> usize {
        self.ids
            .iter()
            .position(|i| i == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    pub fn node(&self, id: &str) -> &Node {
        &self.nodes[self.index(id)]
    }

    /// The up node ids.
    pub fn up_ids(&self) -> Vec<String> {
        self.dir
            .members()
            .into_iter()
            .filter(|m| m.up)
            .map(|m| m.id)
            .collect()
    }

    pub fn kill9(&mut self, id: &str) {
        self.dir.set_up(id, false);
        let i = self.index(id);
        self.nodes[i].kill9();
    }

    /// SIGTERM (the node drains); the directory stops routing to it at once.
    pub fn sigterm(&mut self, id: &str) {
        self.dir.set_up(id, false);
        self.node(id).sigterm();
    }

    /// SIGSTOP: the process freezes (its sockets stay open, unanswered).
    pub fn sigstop(&mut self, id: &str) {
        self.dir.set_up(id, false);
        signal(self.node(id).pid(), libc::SIGSTOP);
    }

    /// SIGCONT after [`Cluster::sigstop`]; the directory is left as it is.
    pub fn sigcont(&mut self, id: &str) {
        signal(self.node(id).pid(), libc::SIGCONT);
    }

    pub fn mark_up(&self, id: &str) {
        self.dir.set_up(id, true);
    }

    /// Everything every node printed, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for (id, node) in self.ids.iter().zip(&self.nodes) {
            out.push_str(&format!(
                "===== {id} (port {}) =====\n{}\n",
                node.port,
                node.log()
            ));
        }
        out
    }

    /// A signed-up account (on some node); returns its token.
    pub async fn account(&self, who: &str) -> String {
        new_account(&self.nodes[0], who).await
    }

    /// Creates files until `count` of them have `node` as their ring owner
    /// among `ring`; returns their ids. Each gets `link` = edit.
    pub async fn files_owned_by(
        &self,
        token: &str,
        node: &str,
        ring: &[&str],
        count: usize,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut made = 0;
        while out.len() < count {
            made += 1;
            assert!(made < 40 * count + 40, "the ring never picks {node}");
            let f = create_file(&self.nodes[0], token, "Cluster board", None).await;
            let id = s(&f["id"]).to_string();
            if ring_owner(ring, &id) == node {
                set_link(&self.nodes[self.index(node)], token, &id, "edit").await;
                out.push((id, s(&f["edit_key"]).to_string()));
            }
        }
        out
    }

    /// Which node holds `file` as the other nodes see it: the node a 409
    /// `moved` names. None when every up node would serve it itself.
    pub async fn holder(&self, token: &str, file: &str) -> Option<String> {
        for m in self.dir.members().into_iter().filter(|m| m.up) {
            let r = http_at(
                m.port,
                "GET",
                &format!("/api/files/{file}"),
                &[("authorization", &bearer(token))],
                None,
            )
            .await;
            if r.status == 409 {
                return Some(moved_to(&r));
            }
        }
        None
    }

    /// `GET /api/files/{id}/doc` the way the router sends it: the ring owner
    /// first, following a 409 `moved`. Returns (node id, version, doc).
    pub async fn doc(&self, token: &str, file: &str) -> (String, u64, Value) {
        let mut port = self.dir.order(file)[0].port;
        let mut at = self.dir.order(file)[0].id.clone();
        for _ in 0..4 {
            let r = http_at(
                port,
                "GET",
                &format!("/api/files/{file}/doc"),
                &[("authorization", &bearer(token))],
                None,
            )
            .await;
            if r.status == 409 {
                at = moved_to(&r);
                port = self.dir.port_of(&at);
                continue;
            }
            r.assert_status(200);
            let v = r.body()["version"].as_u64().expect("numeric version");
            return (at, v, r.body()["doc"].clone());
        }
        panic!("GET /doc of {file} kept being moved");
    }
}

/// The node a 409 `moved` answer names (asserting its shape).
pub fn moved_to(r: &Resp) -> String {
    r.assert_error(409, "moved");
    s(&r.body()["error"]["node"]).to_string()
}

pub fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: a plain syscall on the pid of our own child.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// Like [`http_at`], but None instead of a panic when the node cannot be
/// reached or does not answer within `patience`.
pub async fn try_http_at(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    patience: Duration,
) -> Option<Resp> {
    let asking = atrium_testkit::http::try_request(port, method, path, headers, None);
    tokio::time::timeout(patience, asking).await.ok().flatten()
}

/// Why a connection attempt gave no welcome.
#[derive(Debug)]
pub enum Refusal {
    /// The node closed the socket with this code (None: no code).
    Closed(Option<u16>),
    /// Not reachable, not answering in time, or the stream broke.
    Unreachable(String),
}

/// One attempt: upgrade at `port`, say hello, wait for the welcome.
pub async fn attempt(
    port: u16,
    file: &str,
    hello: &Hello,
    patience: Duration,
) -> Result<(Client, Value), Refusal> {
    let url = format!("ws://127.0.0.1:{port}/files/{file}/ws");
    let ws = match tokio::time::timeout(patience, tokio_tungstenite::connect_async(url)).await {
        Err(_) => return Err(Refusal::Unreachable("upgrade timed out".into())),
        Ok(Err(e)) => return Err(Refusal::Unreachable(e.to_string())),
        Ok(Ok((ws, _))) => ws,
    };
    let mut c = Client { ws };
    let _ = tokio::time::timeout(
        patience,
        c.ws.send(Message::text(hello.to_json().to_string())),
    )
    .await;
    match c.next_non_presence(patience).await {
        Event::Json(v) if v["type"] == "welcome" => Ok((c, v)),
        Event::Json(v) => panic!("expected a welcome or a close after hello, got {v}"),
        Event::Close(code) => Err(Refusal::Closed(code)),
        other => Err(Refusal::Unreachable(format!("{other:?}"))),
    }
}
