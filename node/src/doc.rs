//! Document model: a JSON object of nodes, each node a JSON object of props.
//!
//! Clients change a document with patches (lists of [`Op`]s) that apply
//! all-or-nothing. The document tracks the byte length of its compact JSON
//! serialization as ops are applied, so the size limit is enforced without
//! re-serializing the document, and a rejected patch is rolled back from an
//! undo log instead of from a full clone. Both keep the cost of a patch
//! proportional to the patch, not to the document.

use std::collections::BTreeMap;
use std::io;

use serde_json::{Map, Value};

/// Props of one node, in name order (serde_json's default `Map`).
pub type Props = Map<String, Value>;

/// Node ids are `[A-Za-z0-9_-]{1,64}`: safe in URLs, file names and logs.
const MAX_ID_LEN: usize = 64;

/// Limits for patches and documents.
///
/// Depth counting rule (`max_depth`): a scalar (null, bool, number, string)
/// has depth 0; an array or object has depth 1 + the depth of its deepest
/// element, so an empty `[]` or `{}` has depth 1, `{"x": 1}` has 1 and
/// `[[1]]` has 2. Only prop values are measured; the document object and a
/// node's props object are not counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocLimits {
    /// Most ops in one patch.
    pub max_ops: usize,
    /// Longest prop name, in UTF-8 bytes.
    pub max_prop_name: usize,
    /// Deepest allowed prop value (see the counting rule above).
    pub max_depth: usize,
    /// Largest compact JSON serialization of a whole document, in bytes.
    pub max_doc_bytes: usize,
}

impl Default for DocLimits {
    fn default() -> Self {
        DocLimits {
            max_ops: 1000,
            max_prop_name: 64,
            max_depth: 32,
            max_doc_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Why a patch or document was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PatchError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    TooLarge(String),
}

impl PatchError {
    /// The reject code sent to clients.
    pub fn code(&self) -> &'static str {
        match self {
            PatchError::Invalid(_) => "invalid",
            PatchError::TooLarge(_) => "too-large",
        }
    }
}

/// One edit of a patch.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Create the node with exactly these props (null values are kept as
    /// null), replacing any node of that id.
    Put { id: String, props: Props },
    /// Set the listed props of an existing node; null removes a prop. Does
    /// nothing on a missing node, so a late drag never resurrects a deleted one.
    Set { id: String, props: Props },
    /// Remove the node, if present.
    Delete { id: String },
}

impl Op {
    /// Reads one op's shape. Unknown fields are rejected so that typos and
    /// unsupported extensions fail loudly instead of being silently ignored.
    fn parse(v: &Value) -> Result<Op, String> {
        let obj = v.as_object().ok_or("op must be an object")?;
        let kind = obj.get("op").and_then(Value::as_str).ok_or("missing op")?;
        let allowed: &[&str] = match kind {
            "put" | "set" => &["op", "id", "props"],
            "delete" => &["op", "id"],
            _ => return Err("unknown op".into()),
        };
        if let Some(extra) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!("unexpected field {extra:?} in {kind} op"));
        }
        let id = obj.get("id").and_then(Value::as_str).ok_or("missing id")?;
        let id = id.to_owned();
        if kind == "delete" {
            return Ok(Op::Delete { id });
        }
        let props = match obj.get("props") {
            Some(Value::Object(p)) => p.clone(),
            _ => return Err("props must be an object".into()),
        };
        Ok(if kind == "put" {
            Op::Put { id, props }
        } else {
            Op::Set { id, props }
        })
    }

    /// Checks contents against the limits; shared by `parse_ops` and `apply`
    /// so hand-built ops cannot bypass validation.
    fn validate(&self, limits: &DocLimits) -> Result<(), String> {
        match self {
            Op::Put { id, props } | Op::Set { id, props } => {
                check_id(id)?;
                check_props(props, limits)
            }
            Op::Delete { id } => check_id(id),
        }
    }
}

/// Validates and parses the `ops` array of a patch.
pub fn parse_ops(ops: &Value, limits: &DocLimits) -> Result<Vec<Op>, PatchError> {
    let list = ops
        .as_array()
        .ok_or_else(|| PatchError::Invalid("ops must be an array".into()))?;
    check_count(list.len(), limits)?;
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let op = Op::parse(v).map_err(|m| invalid_at(i, m))?;
            op.validate(limits).map_err(|m| invalid_at(i, m))?;
            Ok(op)
        })
        .collect()
}

fn invalid_at(index: usize, msg: String) -> PatchError {
    PatchError::Invalid(format!("op {index}: {msg}"))
}

fn too_large(what: String, limit: usize) -> PatchError {
    PatchError::TooLarge(format!("{what}, limit is {limit}"))
}

fn check_count(n: usize, limits: &DocLimits) -> Result<(), PatchError> {
    match n > limits.max_ops {
        true => Err(too_large(format!("patch has {n} ops"), limits.max_ops)),
        false => Ok(()),
    }
}

fn check_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    // The id itself is not echoed: it is untrusted and possibly huge.
    ok.then_some(())
        .ok_or_else(|| "node id must match [A-Za-z0-9_-]{1,64}".into())
}

fn check_props(props: &Props, limits: &DocLimits) -> Result<(), String> {
    for (name, value) in props {
        if name.len() > limits.max_prop_name {
            return Err(format!(
                "prop name longer than {} bytes",
                limits.max_prop_name
            ));
        }
        if depth_exceeds(value, limits.max_depth) {
            return Err(format!(
                "prop {name:?} nested deeper than {}",
                limits.max_depth
            ));
        }
    }
    Ok(())
}

/// True if `v` is deeper than `budget`. Stops descending once the budget is
/// spent, so recursion is bounded by the limit, not by the input.
fn depth_exceeds(v: &Value, budget: usize) -> bool {
    match v {
        Value::Array(a) => budget == 0 || a.iter().any(|c| depth_exceeds(c, budget - 1)),
        Value::Object(o) => budget == 0 || o.values().any(|c| depth_exceeds(c, budget - 1)),
        _ => false,
    }
}

/// Counts bytes instead of storing them, to measure serialized sizes.
struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Compact JSON length, measured with the same serializer `to_json` uses so
/// escaping and number formatting always agree.
fn json_len<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, v).expect("JSON values always serialize");
    counter.0
}

/// Length of `"name":value`.
fn prop_len(name: &str, value: &Value) -> usize {
    json_len(name) + 1 + json_len(value)
}

#[derive(Debug, Clone, Default)]
struct Node {
    props: Props,
    /// Sum of `prop_len` over props; braces and commas are derived from the
    /// prop count in `serialized_len`.
    props_len: usize,
}

impl Node {
    fn new(props: Props) -> Self {
        let props_len = props.iter().map(|(k, v)| prop_len(k, v)).sum();
        Node { props, props_len }
    }

    fn serialized_len(&self) -> usize {
        2 + self.props_len + self.props.len().saturating_sub(1)
    }
}

/// Length of `"id":{...}` in the document object.
fn entry_len(id: &str, node: &Node) -> usize {
    json_len(id) + 1 + node.serialized_len()
}

type PrevProps = Vec<(String, Option<Value>)>;

/// How to revert one applied op.
enum Undo {
    /// Put or delete: the node that was at `id` before (None if absent).
    Node { id: String, prev: Option<Node> },
    /// Set: each touched prop's previous value (None if absent), in order.
    Props { id: String, prev: PrevProps },
}

/// A document. Nodes are in a `BTreeMap` so serialization order is
/// deterministic: equal documents give byte-identical JSON, which makes
/// snapshots comparable and tests simple.
#[derive(Debug, Clone, Default)]
pub struct Document {
    nodes: BTreeMap<String, Node>,
    /// Sum of `entry_len` over nodes.
    entries_len: usize,
}

impl Document {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a whole document, validating ids, prop names, depth and size.
    pub fn from_value(v: Value, limits: &DocLimits) -> Result<Self, PatchError> {
        let Value::Object(map) = v else {
            return Err(PatchError::Invalid("document must be a JSON object".into()));
        };
        let mut doc = Document::new();
        for (id, node) in map {
            check_id(&id).map_err(PatchError::Invalid)?;
            let Value::Object(props) = node else {
                return Err(PatchError::Invalid(format!("node {id} must be an object")));
            };
            check_props(&props, limits)
                .map_err(|m| PatchError::Invalid(format!("node {id}: {m}")))?;
            doc.insert_node(id, Node::new(props));
        }
        let len = doc.serialized_len();
        if len > limits.max_doc_bytes {
            return Err(too_large(
                format!("document is {len} bytes"),
                limits.max_doc_bytes,
            ));
        }
        Ok(doc)
    }

    pub fn from_json(bytes: &[u8], limits: &DocLimits) -> Result<Self, PatchError> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| PatchError::Invalid(format!("document is not valid JSON: {e}")))?;
        Self::from_value(v, limits)
    }

    /// Applies ops in order, all or none.
    ///
    /// The size limit is checked on the final state, so a patch may pass
    /// through a larger state as long as it ends within the limit. A patch
    /// that does not grow the document is accepted even if the document is
    /// already over the limit (e.g. after the limit was lowered), so clients
    /// can always delete their way back under it.
    pub fn apply(&mut self, ops: &[Op], limits: &DocLimits) -> Result<(), PatchError> {
        check_count(ops.len(), limits)?;
        for (i, op) in ops.iter().enumerate() {
            op.validate(limits).map_err(|m| invalid_at(i, m))?;
        }
        let start_len = self.serialized_len();
        let mut undo = Vec::new();
        for op in ops {
            undo.extend(self.apply_one(op));
        }
        let end_len = self.serialized_len();
        if end_len > limits.max_doc_bytes && end_len > start_len {
            self.rollback(undo);
            debug_assert_eq!(self.serialized_len(), start_len);
            let what = format!("document would be {end_len} bytes");
            return Err(too_large(what, limits.max_doc_bytes));
        }
        Ok(())
    }

    /// Applies one op; returns how to revert it, or None if it changed nothing.
    fn apply_one(&mut self, op: &Op) -> Option<Undo> {
        let (id, prev) = match op {
            Op::Put { id, props } => (id, self.insert_node(id.clone(), Node::new(props.clone()))),
            Op::Delete { id } => (id, Some(self.remove_node(id)?)),
            Op::Set { id, props } => {
                let node = self.nodes.get_mut(id.as_str())?;
                let before = entry_len(id, node);
                let mut prev = Vec::with_capacity(props.len());
                for (name, value) in props {
                    let new = (!value.is_null()).then(|| value.clone());
                    prev.push((name.clone(), set_prop(node, name, new)));
                }
                self.entries_len = self.entries_len - before + entry_len(id, node);
                return Some(Undo::Props {
                    id: id.clone(),
                    prev,
                });
            }
        };
        Some(Undo::Node {
            id: id.clone(),
            prev,
        })
    }

    /// Reverts applied ops, newest first, so each step sees the state it
    /// was recorded against.
    fn rollback(&mut self, undo: Vec<Undo>) {
        for step in undo.into_iter().rev() {
            match step {
                Undo::Node { id, prev } => {
                    // Put back whatever stood at `id` before, or nothing.
                    self.remove_node(&id);
                    if let Some(node) = prev {
                        self.insert_node(id, node);
                    }
                }
                Undo::Props { id, prev } => {
                    let node = self.nodes.get_mut(&id).expect("set target exists on undo");
                    let before = entry_len(&id, node);
                    for (name, old) in prev.into_iter().rev() {
                        set_prop(node, &name, old);
                    }
                    self.entries_len = self.entries_len - before + entry_len(&id, node);
                }
            }
        }
    }

    fn insert_node(&mut self, id: String, node: Node) -> Option<Node> {
        let prev = self.remove_node(&id);
        self.entries_len += entry_len(&id, &node);
        self.nodes.insert(id, node);
        prev
    }

    fn remove_node(&mut self, id: &str) -> Option<Node> {
        let node = self.nodes.remove(id)?;
        self.entries_len -= entry_len(id, &node);
        Some(node)
    }

    /// Compact JSON serialization.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("JSON values always serialize")
    }

    pub fn to_value(&self) -> Value {
        let map = self.nodes.iter();
        Value::Object(
            map.map(|(id, n)| (id.clone(), Value::Object(n.props.clone())))
                .collect(),
        )
    }

    /// Always equal to `self.to_json().len()`, in O(1).
    pub fn serialized_len(&self) -> usize {
        2 + self.entries_len + self.nodes.len().saturating_sub(1)
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn get(&self, id: &str) -> Option<&Props> {
        self.nodes.get(id).map(|n| &n.props)
    }
}

/// Sets (`Some`) or removes (`None`) one prop, keeping `props_len` in step;
/// returns the previous value for the undo log.
fn set_prop(node: &mut Node, name: &str, value: Option<Value>) -> Option<Value> {
    if let Some(v) = &value {
        node.props_len += prop_len(name, v);
    }
    let old = match value {
        Some(v) => node.props.insert(name.to_owned(), v),
        None => node.props.remove(name),
    };
    if let Some(o) = &old {
        node.props_len -= prop_len(name, o);
    }
    old
}

/// Serializes as the plain `{"id": {props}}` object, streaming straight from
/// the node map (no intermediate `Value`).
impl serde::Serialize for Document {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.nodes.iter().map(|(id, node)| (id, &node.props)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lim() -> DocLimits {
        DocLimits::default()
    }

    fn ops(v: Value) -> Vec<Op> {
        parse_ops(&v, &lim()).unwrap()
    }

    /// Applies a patch and checks the length invariant.
    fn patch(d: &mut Document, v: Value) -> Result<(), PatchError> {
        let r = d.apply(&ops(v), &lim());
        assert_eq!(d.serialized_len(), d.to_json().len());
        r
    }

    fn put(id: &str, props: Value) -> Value {
        json!({"op": "put", "id": id, "props": props})
    }

    fn set(id: &str, props: Value) -> Value {
        json!({"op": "set", "id": id, "props": props})
    }

    fn code(ops: Value, limits: &DocLimits) -> &'static str {
        parse_ops(&ops, limits).unwrap_err().code()
    }

    #[test]
    fn put_creates_and_replaces_exactly() {
        let mut d = Document::new();
        patch(&mut d, json!([put("a", json!({"x": 1, "y": 2}))])).unwrap();
        assert_eq!(d.to_value(), json!({"a": {"x": 1, "y": 2}}));
        patch(&mut d, json!([put("a", json!({"z": null}))])).unwrap();
        assert_eq!(d.to_value(), json!({"a": {"z": null}}));
        assert_eq!(d.node_count(), 1);
    }

    #[test]
    fn set_updates_listed_props_and_null_removes() {
        let mut d = Document::new();
        patch(
            &mut d,
            json!([put("a", json!({"x": 1, "old": 1, "k": "v"}))]),
        )
        .unwrap();
        let s = set(
            "a",
            json!({"x": 10, "fill": "#f00", "old": null, "gone": null}),
        );
        patch(&mut d, json!([s])).unwrap();
        assert_eq!(
            d.to_value(),
            json!({"a": {"x": 10, "fill": "#f00", "k": "v"}})
        );
    }

    #[test]
    fn set_and_delete_on_missing_node_do_nothing() {
        let mut d = Document::new();
        let p = json!([put("a", json!({"x": 1})), {"op": "delete", "id": "a"}]);
        patch(&mut d, p).unwrap();
        patch(&mut d, json!([set("a", json!({"x": 2}))])).unwrap();
        patch(&mut d, json!([{"op": "delete", "id": "a"}])).unwrap();
        assert_eq!(d.to_json(), "{}");
        assert!(d.get("a").is_none());
    }

    #[test]
    fn last_writer_wins_within_and_across_patches() {
        let mut d = Document::new();
        let p = json!([
            put("a", json!({"x": 1})),
            set("a", json!({"x": 2})),
            set("a", json!({"x": 3, "y": 1})),
            put("b", json!({"x": 1})),
            set("b", json!({"x": 2})),
            put("b", json!({"w": 0})),
        ]);
        patch(&mut d, p).unwrap();
        assert_eq!(d.to_value(), json!({"a": {"x": 3, "y": 1}, "b": {"w": 0}}));
        patch(&mut d, json!([set("a", json!({"x": 4}))])).unwrap();
        patch(&mut d, json!([set("a", json!({"x": 5, "y": null}))])).unwrap();
        assert_eq!(d.get("a"), json!({"x": 5}).as_object());
    }

    #[test]
    fn invalid_shapes_are_rejected() {
        let long = "a".repeat(65);
        let cases = [
            json!("put"),
            json!({"op": "move", "id": "a"}),
            json!({"id": "a", "props": {}}),
            json!({"op": "put", "props": {}}),
            json!({"op": "put", "id": "a"}),
            json!({"op": "put", "id": 5, "props": {}}),
            json!({"op": "delete", "id": "a", "props": {}}),
            json!({"op": "set", "id": "a", "props": {}, "extra": 1}),
            put("a", json!([1])),
            set("a", json!(null)),
            put("a b", json!({})),
            put(&long, json!({})),
            put("../x", json!({})),
            put("nœud", json!({})),
            put("", json!({})),
        ];
        for c in cases {
            assert_eq!(code(json!([c]), &lim()), "invalid", "{c}");
        }
        assert_eq!(code(json!({"op": "put"}), &lim()), "invalid");
        parse_ops(&json!([put(&"a".repeat(64), json!({}))]), &lim()).unwrap();
        // apply re-validates ops that did not come from parse_ops
        let bad = [Op::Delete { id: "../x".into() }];
        let err = Document::new().apply(&bad, &lim()).unwrap_err();
        assert_eq!(err.code(), "invalid");
    }

    #[test]
    fn op_count_limit() {
        let many = |n: usize| Value::Array(vec![json!({"op": "delete", "id": "a"}); n]);
        assert_eq!(ops(many(1000)).len(), 1000);
        assert_eq!(code(many(1001), &lim()), "too-large");
        let raw = vec![Op::Delete { id: "a".into() }; 1001];
        let err = Document::new().apply(&raw, &lim()).unwrap_err();
        assert_eq!(
            err,
            PatchError::TooLarge("patch has 1001 ops, limit is 1000".into())
        );
    }

    #[test]
    fn prop_name_limit() {
        let props = |n: usize| Value::Object([("p".repeat(n), json!(1))].into_iter().collect());
        parse_ops(&json!([put("a", props(64)), set("a", props(64))]), &lim()).unwrap();
        assert_eq!(code(json!([put("a", props(65))]), &lim()), "invalid");
        assert_eq!(code(json!([set("a", props(65))]), &lim()), "invalid");
    }

    #[test]
    fn depth_limit() {
        let nested = |depth: usize, obj: bool| {
            (0..depth).fold(
                json!(1),
                |v, _| if obj { json!({"k": v}) } else { json!([v]) },
            )
        };
        for obj in [false, true] {
            parse_ops(&json!([put("a", json!({"v": nested(32, obj)}))]), &lim()).unwrap();
            let deep = json!([set("a", json!({"v": nested(33, obj)}))]);
            assert_eq!(code(deep, &lim()), "invalid");
        }
        // The counting rule: scalar 0, container 1 + deepest child.
        let one = DocLimits {
            max_depth: 1,
            ..lim()
        };
        parse_ops(
            &json!([put("a", json!({"s": 1, "o": {"x": 1}, "e": []}))]),
            &one,
        )
        .unwrap();
        assert_eq!(code(json!([put("a", json!({"v": [[]]}))]), &one), "invalid");
    }

    #[test]
    fn size_limit_rejects_and_leaves_document_unchanged() {
        let small = DocLimits {
            max_doc_bytes: 120,
            ..lim()
        };
        let mut d = Document::new();
        patch(
            &mut d,
            json!([put("a", json!({"x": 1})), put("b", json!({"y": "hi"}))]),
        )
        .unwrap();
        let before = d.to_json();
        let big = "z".repeat(100);
        // Grows through every kind of op, then passes the limit at the end.
        let p = json!([
            put("c", json!({"n": 1})),
            set("a", json!({"x": 2, "w": [1, 2, 3]})),
            {"op": "delete", "id": "b"},
            put("b", json!({"again": true})),
            set("a", json!({"x": null})),
            set("c", json!({"big": big})),
        ]);
        let err = d.apply(&ops(p), &small).unwrap_err();
        assert_eq!(err.code(), "too-large");
        assert_eq!(d.to_json(), before);
        assert_eq!(d.serialized_len(), before.len());
        // Passing the limit midway is fine if the patch ends under it.
        let p = json!([put("c", json!({"big": big})), {"op": "delete", "id": "c"}]);
        d.apply(&ops(p), &small).unwrap();
        assert_eq!(d.to_json(), before);
        // A shrinking patch is accepted even over a lowered limit.
        let tiny = DocLimits {
            max_doc_bytes: 10,
            ..lim()
        };
        d.apply(&ops(json!([set("b", json!({"y": null}))])), &tiny)
            .unwrap();
        assert_eq!(d.to_json(), r#"{"a":{"x":1},"b":{}}"#);
    }

    /// Deterministic pseudo-random numbers (64-bit LCG, high bits).
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) % n as u64) as usize
        }
    }

    fn random_value(r: &mut Lcg, depth: usize) -> Value {
        const STRS: [&str; 5] = ["", "é", "a\"b\\c", "\u{1}\n\t", "✓ done"];
        const NUMS: [f64; 5] = [0.1, -0.0, 1e300, 123456.789, -2.5e-8];
        match r.below(if depth == 0 { 7 } else { 9 }) {
            0 => Value::Null,
            1 => json!(r.below(2) == 0),
            2 => json!(r.below(1 << 30) as i64 - (1 << 29)),
            3 => json!(NUMS[r.below(5)]),
            4 => json!(u64::MAX - r.below(9) as u64),
            5 | 6 => json!(STRS[r.below(5)]),
            7 => Value::Array(
                (0..r.below(4))
                    .map(|_| random_value(r, depth - 1))
                    .collect(),
            ),
            _ => Value::Object(random_props(r, depth - 1)),
        }
    }

    fn random_props(r: &mut Lcg, depth: usize) -> Props {
        const NAMES: [&str; 6] = ["x", "y", "fill", "név", "q\"", "\u{7}"];
        let n = r.below(4);
        (0..n)
            .map(|_| (NAMES[r.below(6)].to_owned(), random_value(r, depth)))
            .collect()
    }

    #[test]
    fn serialized_len_matches_over_random_ops() {
        let mut r = Lcg(42);
        let mut d = Document::new();
        let (mut applied, mut rejected) = (0, 0);
        for round in 0..400 {
            let patch: Vec<Op> = (0..1 + r.below(5))
                .map(|_| {
                    let id = ["a", "b", "c", "d-1", "E_2"][r.below(5)].to_owned();
                    match r.below(5) {
                        0 => Op::Delete { id },
                        1 => Op::Put {
                            id,
                            props: random_props(&mut r, 3),
                        },
                        _ => Op::Set {
                            id,
                            props: random_props(&mut r, 3),
                        },
                    }
                })
                .collect();
            // Some patches get a tight limit so rollbacks are exercised too.
            let mut limits = lim();
            if r.below(4) == 0 {
                limits.max_doc_bytes = d.serialized_len() + r.below(40);
            }
            let before = d.to_json();
            match d.apply(&patch, &limits) {
                Ok(()) => applied += patch.len(),
                Err(e) => {
                    assert_eq!(e.code(), "too-large");
                    assert_eq!(d.to_json(), before);
                    rejected += 1;
                }
            }
            assert_eq!(d.serialized_len(), d.to_json().len(), "round {round}");
            if round % 50 == 0 {
                let back = Document::from_json(d.to_json().as_bytes(), &lim()).unwrap();
                assert_eq!(back.to_json(), d.to_json());
            }
        }
        assert!(applied > 300 && rejected > 10, "{applied} {rejected}");
    }

    #[test]
    fn from_json_round_trip_and_validation() {
        let mut d = Document::new();
        let p = json!([
            put("n1", json!({"t": "héllo \"x\"", "v": [1.5, {"k": null}]})),
            put("n2", json!({}))
        ]);
        patch(&mut d, p).unwrap();
        let back = Document::from_json(d.to_json().as_bytes(), &lim()).unwrap();
        assert_eq!(back.to_json(), d.to_json());
        assert_eq!(back.serialized_len(), d.serialized_len());
        assert_eq!((back.node_count(), back.get("n2")), (2, Some(&Map::new())));
        // Whitespace in the input does not count toward the compact length.
        let spaced = Document::from_json(b" { \"a\" : { \"x\" : [ 1 , 2 ] } } ", &lim()).unwrap();
        assert_eq!(spaced.serialized_len(), spaced.to_json().len());
        assert_eq!(Document::new().serialized_len(), 2);

        let bad: [&[u8]; 5] = [
            b"{",
            b"[]",
            br#"{"a b":{}}"#,
            br#"{"a":1}"#,
            br#"{"a":{"v":[[[]]]}}"#,
        ];
        let two = DocLimits {
            max_depth: 2,
            ..lim()
        };
        for b in bad {
            assert_eq!(Document::from_json(b, &two).unwrap_err().code(), "invalid");
        }
        let small = DocLimits {
            max_doc_bytes: 8,
            ..lim()
        };
        let err = Document::from_json(br#"{"a":{"x":1}}"#, &small).unwrap_err();
        assert_eq!(err.code(), "too-large");
    }
}
