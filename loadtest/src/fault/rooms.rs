//! Which node holds which rooms, and how a node's rooms ended.

use std::collections::BTreeMap;

use super::*;

/// Every node's rooms, from its own `/health` (a node has a room only for a file whose lease it
/// holds, and every file of the run has people in it: rooms = files held).
pub async fn rooms_by_node(c: &Cluster) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for n in &c.nodes {
        let ep = Endpoint::from_url(&n.url);
        if let Ok(Some(st)) = node::health(&ep, Duration::from_millis(900)).await {
            out.insert(n.id.clone(), st.rooms);
        }
    }
    out
}

/// A node's `atrium_room_exits_total` by reason (empty when it does not answer).
pub(super) async fn room_exits(url: &str) -> BTreeMap<String, u64> {
    let ep = Endpoint::from_url(url);
    let Ok(text) = http::get_text(&ep, "/metrics", Duration::from_secs(2)).await else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|l| l.strip_prefix("atrium_room_exits_total{reason=\""))
        .filter_map(|l| {
            let (reason, rest) = l.split_once("\"}")?;
            Some((reason.to_string(), rest.trim().parse::<f64>().ok()? as u64))
        })
        .collect()
}
