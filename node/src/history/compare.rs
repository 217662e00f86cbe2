//! Comparing two versions: the nodes added, removed, and changed with the props that changed.

use serde::Serialize;
use serde_json::{Map, Value};

use super::entries::{side_by_side, Side};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    pub id: String,
    /// The props whose values differ (added, removed or changed), in name order.
    pub props: Vec<String>,
}

/// What changed from one document to another, each list in id order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Comparison {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<Changed>,
}

/// Compares two documents (compact JSON): what `to` has that `from` had not. Both are
/// walked in id order at once; only a node that differs is parsed, to name its props.
pub fn compare(from: &str, to: &str) -> Result<Comparison, String> {
    let mut out = Comparison::default();
    for node in side_by_side(from, to)? {
        match node {
            Side::Gone(id) => out.removed.push(id.into_owned()),
            Side::New(id, _) => out.added.push(id.into_owned()),
            Side::Both(id, old, new) if old != new => {
                let props = changed_props(old, new);
                if !props.is_empty() {
                    out.changed.push(Changed {
                        id: id.into_owned(),
                        props,
                    });
                }
            }
            Side::Both(..) => {}
        }
    }
    Ok(out)
}

/// The names of the props that differ between two nodes' props, in name order.
fn changed_props(old: &str, new: &str) -> Vec<String> {
    let parse = |raw: &str| serde_json::from_str::<Map<String, Value>>(raw).unwrap_or_default();
    let (a, b) = (parse(old), parse(new));
    let mut names: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .chain(b.keys().filter(|k| !a.contains_key(*k)).cloned())
        .collect();
    names.sort();
    names
}
