//! Comparing two versions: the nodes added, removed, and changed with the props that changed.

use serde::Serialize;
use serde_json::{Map, Value};

use super::codec::nodes;

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

/// Compares two documents (compact JSON): what `to` has that `from` had not.
pub fn compare(from: &str, to: &str) -> Result<Comparison, String> {
    let (from, to) = (nodes(from)?, nodes(to)?);
    let mut out = Comparison::default();
    for (id, props) in &to {
        match from.get(id) {
            None => out.added.push(id.clone()),
            Some(old) if old.get() != props.get() => {
                let parse = |raw: &str| serde_json::from_str::<Map<String, Value>>(raw);
                let (a, b) = (parse(old.get()), parse(props.get()));
                let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
                let mut names: Vec<String> = a
                    .iter()
                    .filter(|(k, v)| b.get(*k) != Some(*v))
                    .map(|(k, _)| k.clone())
                    .chain(b.keys().filter(|k| !a.contains_key(*k)).cloned())
                    .collect();
                names.sort();
                if !names.is_empty() {
                    out.changed.push(Changed {
                        id: id.clone(),
                        props: names,
                    });
                }
            }
            Some(_) => {}
        }
    }
    out.removed = from
        .keys()
        .filter(|id| !to.contains_key(*id))
        .cloned()
        .collect();
    Ok(out)
}
