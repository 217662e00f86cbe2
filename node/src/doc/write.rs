//! Writing a node's props: a `set`'s props applied to the stored text in one
//! pass, and several sets on one node merged into one.

use std::collections::BTreeMap;

use serde_json::Value;

use super::members::Members;
use super::op::Props;

/// Props by name, borrowed from ops: what several ops on one node come to.
type Merged<'o> = BTreeMap<&'o str, &'o Value>;

/// Writes the props object `old` (as an `Entry` holds it) with a `set` op's
/// props applied (`set` in name order): each listed prop replaced, a null one
/// removed. One pass over both, copying untouched props as they are, so the
/// cost is that of the node and the op, and names stay in order.
pub(super) fn write_set<'v>(
    old: &str,
    set: impl Iterator<Item = (&'v str, &'v Value)>,
    out: &mut Vec<u8>,
) {
    let mut first = true;
    let mut sets = set.peekable();
    out.push(b'{');
    for member in Members::new(old) {
        let name = member.name();
        while let Some((n, v)) = sets.next_if(|(n, _)| *n < &*name) {
            write_prop(out, &mut first, n, v);
        }
        match sets.next_if(|(n, _)| *n == &*name) {
            Some((n, v)) => write_prop(out, &mut first, n, v),
            None => {
                separate(out, &mut first);
                out.extend_from_slice(member.raw.as_bytes());
            }
        }
    }
    for (n, v) in sets {
        write_prop(out, &mut first, n, v);
    }
    out.push(b'}');
}

fn separate(out: &mut Vec<u8>, first: &mut bool) {
    if !std::mem::take(first) {
        out.push(b',');
    }
}

/// Writes `"name":value`; a null value (removal) writes nothing.
fn write_prop(out: &mut Vec<u8>, first: &mut bool, name: &str, value: &Value) {
    if value.is_null() {
        return;
    }
    separate(out, first);
    serde_json::to_writer(&mut *out, name).expect("strings always serialize");
    out.push(b':');
    serde_json::to_writer(&mut *out, value).expect("JSON values always serialize");
}

pub(super) fn props_iter(props: &Props) -> impl Iterator<Item = (&str, &Value)> {
    props.iter().map(|(k, v)| (k.as_str(), v))
}

/// Several sets on one node as one: the last value of each name wins. On top
/// of a put's props (`base`), a null removes the prop; on their own, nulls are
/// kept, since they remove props when the result is applied as a set.
pub(super) fn merged<'o>(sets: Vec<&'o Props>, base: Option<&'o Props>) -> Merged<'o> {
    let on_put = base.is_some();
    let mut all: Merged<'o> = base.map_or_else(Merged::new, |b| props_iter(b).collect());
    for (name, value) in sets.into_iter().flat_map(props_iter) {
        match on_put && value.is_null() {
            true => all.remove(name),
            false => all.insert(name, value),
        };
    }
    all
}
