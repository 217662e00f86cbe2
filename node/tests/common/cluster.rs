//! Clusters: several node processes sharing a Postgres database and a coordinator
//! namespace, started with the test kit's fleet settings; the directory of their nodes
//! as clients see it (`directory`), what their files look like from outside (`files`),
//! reaching their nodes (`reach`), stopping and freezing them (`outages`), and both
//! coordinator backends (`backend`).

mod backend;
mod directory;
mod files;
mod outages;
mod reach;

use super::*;
use atrium_testkit::fleet::{fleet_node_env, namespaced};

pub use atrium_testkit::postgres::TestDatabase;
pub use backend::*;
pub use directory::*;
pub use reach::*;

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
        let coordinator = namespaced(server, "ct");
        let mut envs = fleet_node_env(&db.url, &coordinator, lease_ms);
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
}
