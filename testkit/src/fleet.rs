//! A fleet of `atrium-node`s behind `atrium-router`s, as the tests of every crate start
//! it: each binary spawned with its output kept (nodes on port 0, their bound address read
//! from what they print; routers on free ports), and waited for until ready; the nodes
//! sharing a throwaway database and a coordinator namespace of the test's own; stand-in
//! members a test announces in the coordinator itself.

mod binaries;
mod coordinator;
mod lookup;
mod node;
mod router;

use std::time::Duration;

pub use binaries::{node_binary, Binaries};
pub use coordinator::{namespaced, Heartbeat, Namespace};
pub use node::{fleet_node_env, NodeProc};
pub use router::RouterProc;

use crate::env::service_env;
use crate::postgres::TestDatabase;
use crate::wait;

/// Nodes and routers sharing one database and one coordinator namespace.
/// Fields drop in order: routers, nodes, then the database.
pub struct Fleet {
    pub routers: Vec<RouterProc>,
    pub nodes: Vec<NodeProc>,
    pub coordinator: String,
    pub lease_ms: u64,
    /// What every node is started with.
    node_env: Vec<(String, String)>,
    bins: Binaries,
    pub db: TestDatabase,
}

impl Fleet {
    /// `nodes` nodes (`n0`...) and `routers` routers on the coordinator server the variable
    /// `server_env` names, each router routing to every node before this returns.
    pub async fn start(
        bins: Binaries,
        server_env: &str,
        lease_ms: u64,
        nodes: usize,
        routers: usize,
    ) -> Fleet {
        Fleet::start_with(bins, server_env, lease_ms, nodes, routers, &[]).await
    }

    /// Like [`Fleet::start`], every node also started with `extra` settings.
    pub async fn start_with(
        bins: Binaries,
        server_env: &str,
        lease_ms: u64,
        nodes: usize,
        routers: usize,
        extra: &[(&str, &str)],
    ) -> Fleet {
        let db = TestDatabase::create().await;
        let coordinator = namespaced(&service_env(server_env), "rt");
        let mut node_env = fleet_node_env(&db.url, &coordinator, lease_ms);
        // Behind a router every socket comes from one address, with the client's in
        // X-Forwarded-For.
        for (k, v) in [
            ("ATRIUM_TRUST_PROXY", "127.0.0.1"),
            ("ATRIUM_WS_PER_ACCOUNT", "1000"),
            ("ATRIUM_WS_PER_SECOND", "100000"),
        ] {
            node_env.push((k.into(), v.into()));
        }
        for (k, v) in extra {
            node_env.push(((*k).into(), (*v).into()));
        }
        let mut fleet = Fleet {
            routers: Vec::new(),
            nodes: Vec::new(),
            coordinator,
            lease_ms,
            node_env,
            bins,
            db,
        };
        // One at a time: the first node applies the migrations alone.
        for _ in 0..nodes {
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

    /// Starts node `n<count>`; its index.
    pub async fn add_node(&mut self) -> usize {
        let id = format!("n{}", self.nodes.len());
        let node = NodeProc::start_scratch(&self.bins.node, &id, &self.node_env).await;
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Starts one more router, with `extra` settings; its index.
    pub async fn add_router(&mut self, extra: &[(&str, &str)]) -> usize {
        let n = self.routers.len();
        let name = format!("atrium-router {n}");
        let router = RouterProc::start(
            &self.bins.router,
            &name,
            &self.coordinator,
            self.lease_ms,
            extra,
        )
        .await;
        self.routers.push(router);
        n
    }

    /// Waits (four lease times at most) until router `r` routes to exactly `count` live
    /// members.
    pub async fn wait_members(&self, r: usize, count: usize) {
        let within = Duration::from_millis(self.lease_ms * 4);
        let router = &self.routers[r];
        wait::until(
            within,
            Duration::from_millis(50),
            || router.routes_to(count),
            |h| format!("router {r} never saw {count} members: {h}\n{}", self.logs()),
        )
        .await;
    }
}
