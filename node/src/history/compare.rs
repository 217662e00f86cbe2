//! Comparing two versions: the nodes added, removed, and changed with the props that changed.

use std::cmp::Ordering;

use serde::Serialize;
use serde_json::{Map, Value};

use super::entries::in_order;

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
    let (mut a, mut b) = (in_order(from)?.peekable(), in_order(to)?.peekable());
    let mut out = Comparison::default();
    loop {
        let step = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some((x, _)), Some((y, _))) => x.as_ref().cmp(y.as_ref()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
        };
        match step {
            Ordering::Less => out.removed.push(a.next().expect("peeked").0.into_owned()),
            Ordering::Greater => out.added.push(b.next().expect("peeked").0.into_owned()),
            Ordering::Equal => {
                let ((_, old), (id, new)) = (a.next().expect("peeked"), b.next().expect("peeked"));
                if old != new {
                    let props = changed_props(old, new);
                    if !props.is_empty() {
                        out.changed.push(Changed {
                            id: id.into_owned(),
                            props,
                        });
                    }
                }
            }
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
