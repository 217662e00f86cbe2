//! Bases and deltas: compressing documents, the difference between two, and reading a
//! version back from its base and the deltas after it.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use serde_json::value::RawValue;

use super::VersionData;

/// A document as nodes, each node's props kept as their JSON text.
pub type Nodes = BTreeMap<String, Box<RawValue>>;
/// A delta: each changed node's whole new props, or `None` where the node is gone.
pub type Delta = BTreeMap<String, Option<Box<RawValue>>>;

/// Compresses text (deflate, level 6).
pub fn deflate(text: &str) -> Vec<u8> {
    let mut enc = DeflateEncoder::new(
        Vec::with_capacity(text.len() / 4 + 16),
        Compression::default(),
    );
    enc.write_all(text.as_bytes()).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

/// Inflates what [`deflate`] made, reading at most `limit` bytes of text.
pub fn inflate(bytes: &[u8], limit: usize) -> Result<String, String> {
    let mut out = String::new();
    DeflateDecoder::new(bytes)
        .take(limit as u64 + 1)
        .read_to_string(&mut out)
        .map_err(|e| format!("a stored version does not inflate: {e}"))?;
    if out.len() > limit {
        return Err("a stored version is larger than a document may be".into());
    }
    Ok(out)
}

pub(super) fn nodes(doc: &str) -> Result<Nodes, String> {
    serde_json::from_str(doc).map_err(|e| format!("not a document: {e}"))
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("nodes serialize")
}

/// The delta that turns document `from` into document `to` (both compact JSON), as JSON.
pub fn delta(from: &str, to: &str) -> Result<String, String> {
    let (from, to) = (nodes(from)?, nodes(to)?);
    Ok(to_json(&delta_of(&from, &to)))
}

pub(super) fn delta_of(from: &Nodes, to: &Nodes) -> Delta {
    let mut d = Delta::new();
    for (id, props) in to {
        if from.get(id).is_none_or(|p| p.get() != props.get()) {
            d.insert(id.clone(), Some(props.clone()));
        }
    }
    for id in from.keys().filter(|id| !to.contains_key(*id)) {
        d.insert(id.clone(), None);
    }
    d
}

/// Applies a delta (JSON) to a document's nodes.
pub fn apply_delta(doc: &mut Nodes, delta: &str) -> Result<(), String> {
    let d: Delta = serde_json::from_str(delta).map_err(|e| format!("not a delta: {e}"))?;
    for (id, props) in d {
        match props {
            Some(p) => doc.insert(id, p),
            None => doc.remove(&id),
        };
    }
    Ok(())
}

/// One delta with the effect of `first` then `second` (JSON in, JSON out).
pub fn merge_deltas(first: &str, second: &str) -> Result<String, String> {
    let mut a: Delta = serde_json::from_str(first).map_err(|e| format!("not a delta: {e}"))?;
    let b: Delta = serde_json::from_str(second).map_err(|e| format!("not a delta: {e}"))?;
    a.extend(b);
    Ok(to_json(&a))
}

/// The document (compact JSON) a chain of rows gives: a base, then the deltas after it.
pub fn materialize(chain: &[VersionData], limit: usize) -> Result<String, String> {
    let Some((VersionData::Base(base), deltas)) = chain.split_first() else {
        return Err("a version's chain does not start with a base".into());
    };
    if deltas.is_empty() {
        return inflate(base, limit);
    }
    let mut doc = nodes(&inflate(base, limit)?)?;
    for d in deltas {
        match d {
            VersionData::Delta(bytes) => apply_delta(&mut doc, &inflate(bytes, limit)?)?,
            VersionData::Base(_) => return Err("a base inside a version's chain".into()),
        }
    }
    Ok(to_json(&doc))
}
