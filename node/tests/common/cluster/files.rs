//! What a cluster's files look like from outside: files a node owns, who holds a file,
//! and its document as a router would read it.

use super::*;
use atrium_testkit::http::get_as;

impl Cluster {
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
            let r = get_as(m.port, &format!("/api/files/{file}"), token).await;
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
            let r = get_as(port, &format!("/api/files/{file}/doc"), token).await;
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
