//! Checks of what peers hold against the file's document in the store.

use super::*;

/// Checks one file after a run: `GET /doc` (through its holder) has exactly
/// the acked patches, each version given once and none skipped, every acked
/// edit in the document, and every client's model equal to it. Returns the
/// holder and the version.
pub async fn verify_file(
    cluster: &Cluster,
    token: &str,
    file: &str,
    peers: &mut [&mut Peer],
) -> (String, u64) {
    let (holder, version, doc) = cluster.doc(token, file).await;
    let mut versions: BTreeMap<u64, (String, u64)> = BTreeMap::new();
    for p in peers.iter() {
        assert!(p.unacked.is_empty(), "peer {} has unacked patches", p.label);
        for (&op, &v) in &p.acked {
            if let Some(other) = versions.insert(v, (p.label.clone(), op)) {
                panic!(
                    "{file}: version {v} was given to op {op} of {} and to op {} of {}",
                    p.label, other.1, other.0
                );
            }
            let node = p.edit_node(op);
            assert_eq!(
                doc.get(&node),
                Some(&json!({"by": p.label, "n": op})),
                "{file}: the acked edit {node} (v{v}) is missing from GET /doc at v{version}"
            );
        }
    }
    let expected: Vec<u64> = (1..=version).collect();
    let got: Vec<u64> = versions.keys().copied().collect();
    assert_eq!(
        got, expected,
        "{file}: the acked versions must be exactly 1..={version}, once each"
    );
    for p in peers.iter_mut() {
        p.pump_until(&cluster.dir, Duration::from_secs(20), "catching up", |p| {
            p.version >= version
        })
        .await;
        assert_eq!(p.version, version, "peer {} went past GET /doc", p.label);
        assert_eq!(
            Value::Object(p.doc.clone()),
            doc,
            "{file}: client {} did not converge to GET /doc",
            p.label
        );
    }
    (holder, version)
}

/// Groups peers by file and verifies each file; returns file -> holder.
pub async fn verify_all(
    cluster: &Cluster,
    token: &str,
    peers: &mut [Peer],
) -> BTreeMap<String, String> {
    let mut files: Vec<String> = peers.iter().map(|p| p.file.clone()).collect();
    files.sort();
    files.dedup();
    let mut holders = BTreeMap::new();
    for f in files {
        let mut mine: Vec<&mut Peer> = peers.iter_mut().filter(|p| p.file == f).collect();
        let (holder, _) = verify_file(cluster, token, &f, &mut mine).await;
        holders.insert(f, holder);
    }
    holders
}
