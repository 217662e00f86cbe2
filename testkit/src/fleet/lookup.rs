//! Finding a fleet's nodes: by id, by the file they serve, and what they all printed.

use super::{Fleet, NodeProc};
use crate::http::try_get_as;

impl Fleet {
    pub fn node(&self, id: &str) -> &NodeProc {
        &self.nodes[self.index(id)]
    }

    pub fn node_mut(&mut self, id: &str) -> &mut NodeProc {
        let i = self.index(id);
        &mut self.nodes[i]
    }

    fn index(&self, id: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    /// Which node serves `file` now, as the live nodes tell (as `token`): the one their
    /// 409 `moved` to `GET /api/files/{file}` names. `None` when one of them does not
    /// answer, or none names a holder.
    pub async fn serving(&self, token: &str, file: &str) -> Option<String> {
        for n in &self.nodes {
            if n.proc.exited().is_some() {
                continue;
            }
            let r = try_get_as(n.port, &format!("/api/files/{file}"), token).await?;
            if r.status == 409 {
                return r.body()["error"]["node"].as_str().map(str::to_string);
            }
        }
        None
    }

    /// Everything every node and router printed, for failure messages.
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
