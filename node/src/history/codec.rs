//! Bases and deltas: compressing documents, the difference between two, and reading a
//! version back from its base and the deltas after it.

use std::borrow::Cow;
use std::io::{Read, Write};

use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;

use super::entries::{charged_len, in_order, side_by_side, Side, Sorted, Writer};
use super::VersionData;

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

/// The delta that turns document `from` into document `to` (both compact JSON), as JSON:
/// each node that is new or different with its whole new props, `null` for each node
/// gone. Both are walked in id order at once, so it costs the two texts and the answer.
pub fn delta(from: &str, to: &str) -> Result<String, String> {
    let mut out = Writer::default();
    for node in side_by_side(from, to)? {
        match node {
            Side::Gone(id) => out.push(&id, "null"),
            Side::New(id, new) => out.push(&id, new),
            Side::Both(id, old, new) if old != new => out.push(&id, new),
            Side::Both(..) => {}
        }
    }
    Ok(out.finish())
}

/// One delta with the effect of `first` then `second` (JSON in, JSON out).
pub fn merge_deltas(first: &str, second: &str) -> Result<String, String> {
    let size = first.len() + second.len();
    Ok(overlay(
        vec![in_order(first)?, in_order(second)?],
        Keep::Deletions,
        size,
    ))
}

/// Whether an overlay keeps the `null`s that delete nodes (merging deltas) or applies them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    Deletions,
    Nodes,
}

/// The entries of all `layers` in id order, each id with its value in the last layer that
/// has it (a delta's `null` removes the node unless `keep` says to keep deletions).
fn overlay(layers: Vec<Sorted<'_>>, keep: Keep, capacity: usize) -> String {
    let mut layers: Vec<_> = layers.into_iter().map(Iterator::peekable).collect();
    let mut out = Writer::with_capacity(capacity);
    loop {
        let mut least: Option<Cow<'_, str>> = None;
        for layer in &mut layers {
            if let Some((id, _)) = layer.peek() {
                if least.as_deref().is_none_or(|l| id.as_ref() < l) {
                    least = Some(id.clone());
                }
            }
        }
        let Some(id) = least else {
            break;
        };
        let mut value = None;
        for layer in &mut layers {
            if layer.peek().is_some_and(|(i, _)| *i == id) {
                value = layer.next().map(|(_, v)| v);
            }
        }
        match value {
            Some("null") if keep == Keep::Nodes => {}
            Some(v) => out.push(&id, v),
            None => {}
        }
    }
    out.finish()
}

/// The document (compact JSON) a chain of rows gives: a base, then the deltas after it,
/// walked together in id order (the texts and the answer, no map of nodes).
pub fn materialize(chain: &[VersionData], limit: usize) -> Result<String, String> {
    materialize_measured(chain, limit).map(|(doc, _)| doc)
}

/// [`materialize`], with the document's size as the document limits count it (measured
/// for the limit anyway).
pub fn materialize_measured(
    chain: &[VersionData],
    limit: usize,
) -> Result<(String, usize), String> {
    let Some((VersionData::Base(base), deltas)) = chain.split_first() else {
        return Err("a version's chain does not start with a base".into());
    };
    if deltas.is_empty() {
        return within(inflate(base, limit)?, limit);
    }
    // A delta names each node changed with its new props and each node removed: at most
    // the documents before and after it together.
    let delta_limit = limit.saturating_mul(2);
    let mut texts = vec![inflate(base, limit)?];
    for d in deltas {
        match d {
            VersionData::Delta(bytes) => texts.push(inflate(bytes, delta_limit)?),
            VersionData::Base(_) => return Err("a base inside a version's chain".into()),
        }
    }
    let layers = texts
        .iter()
        .map(|t| in_order(t))
        .collect::<Result<Vec<_>, _>>()?;
    let doc = overlay(layers, Keep::Nodes, texts[0].len());
    drop(texts);
    within(doc, limit)
}

/// `doc` and what it counts against the document limits (tiny nodes as
/// [`MIN_NODE_BYTES`](crate::doc::MIN_NODE_BYTES) each, as the memory work on it takes),
/// if that is at most `limit`.
fn within(doc: String, limit: usize) -> Result<(String, usize), String> {
    let charged = charged_len(&doc)?;
    match charged <= limit {
        true => Ok((doc, charged)),
        false => Err("a stored version is larger than a document may be".into()),
    }
}
