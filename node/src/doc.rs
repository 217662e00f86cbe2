//! Document model: a JSON object of nodes, each node a JSON object of props.
//!
//! Clients change a document with patches (lists of [`Op`]s) that apply
//! all-or-nothing. The document tracks the byte length of its compact JSON
//! serialization as ops are applied, so the size limit is enforced without
//! re-serializing the document, and a rejected patch is rolled back from an
//! undo log instead of from a full clone. Both keep the cost of a patch
//! proportional to the patch and the nodes it touches, not to the document.
//!
//! In memory each node is kept as its own compact JSON text, in one
//! allocation with its id (see `Entry`): a document costs about its JSON size
//! plus a few dozen bytes a node, instead of a tree of `Value`s many times
//! that. `put` writes a node's text, `set` rewrites it in one pass over the
//! old text, and serializing the document is concatenation.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// Props of one node, in name order (serde_json's default `Map`).
pub type Props = Map<String, Value>;

/// Node ids are `[A-Za-z0-9_-]{1,64}`: safe in URLs, file names and logs.
const MAX_ID_LEN: usize = 64;

/// Memory a document takes while it is built from its JSON and held, per byte of
/// that JSON: the text, the document (about 1.3x, docs/scaling.md), and room to
/// spare. What loads, snapshots and uploads reserve from the memory budget.
pub const BUILD_BYTES_PER_JSON_BYTE: usize = 3;

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
    /// Largest compact JSON serialization of a whole document, in bytes,
    /// each node's `"id":{...}` counted as at least [`MIN_NODE_BYTES`] (see
    /// [`Document::charged_len`]), so memory stays within a few times the limit.
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

    /// The id of the node the op is about.
    pub fn id(&self) -> &str {
        match self {
            Op::Put { id, .. } | Op::Set { id, .. } | Op::Delete { id } => id,
        }
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

/// The size limit counts each node's `"id":{...}` as at least this many
/// bytes. A node in memory costs its JSON text plus a fixed overhead (its
/// allocation's rounding and header, its slot in the ordered set), which a
/// tiny node like `"n1":{}` cannot pay for with its 7 bytes of JSON; counted
/// as 24, it stays within 4 bytes of memory per counted byte (measured in
/// `tests/doc_memory.rs`). Nodes of 24 bytes or more count as their JSON.
pub const MIN_NODE_BYTES: usize = 24;

thread_local! {
    /// Where a node's text is written before it gets its exact allocation.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Scratch space kept between nodes is capped, so one huge node does not pin
/// its size on a thread forever.
const SCRATCH_KEEP: usize = 64 * 1024;

/// One node in one allocation: a byte holding the id's length (1 to 64, so a
/// one-byte UTF-8 character), the id, then the node's props as compact JSON,
/// `{...}` with names in order, exactly as `serde_json` writes a [`Props`].
/// Entries compare by id alone, so the set is searched with a `&str`.
#[derive(Clone)]
struct Entry(Box<str>);

impl Entry {
    fn new(id: &str, props: &Props) -> Entry {
        Entry::build(id, |out| {
            serde_json::to_writer(out, props).expect("JSON values always serialize")
        })
    }

    /// Writes the id, lets `props` write the props' JSON, and allocates the
    /// result once, at its exact size.
    fn build(id: &str, props: impl FnOnce(&mut Vec<u8>)) -> Entry {
        debug_assert!(check_id(id).is_ok());
        SCRATCH.with_borrow_mut(|out| {
            out.clear();
            out.push(id.len() as u8);
            out.extend_from_slice(id.as_bytes());
            props(out);
            let text = std::str::from_utf8(out).expect("ids and serde_json output are UTF-8");
            let entry = Entry(text.into());
            if out.capacity() > SCRATCH_KEEP {
                *out = Vec::new();
            }
            entry
        })
    }

    fn split(&self) -> (&str, &str) {
        let n = usize::from(self.0.as_bytes()[0]);
        (&self.0[1..=n], &self.0[n + 1..])
    }

    fn id(&self) -> &str {
        self.split().0
    }

    /// The props' compact JSON, `{...}`.
    fn props_json(&self) -> &str {
        self.split().1
    }

    fn props(&self) -> Props {
        serde_json::from_str(self.props_json()).expect("stored props are valid JSON")
    }

    /// Length of `"id":{...}` in the document's JSON: the text without the
    /// length byte, plus two quotes and a colon (ids need no escaping).
    fn json_len(&self) -> usize {
        self.0.len() + 2
    }

    /// What the size limit adds to this node's JSON length.
    fn shortfall(&self) -> usize {
        MIN_NODE_BYTES.saturating_sub(self.json_len())
    }
}

impl std::borrow::Borrow<str> for Entry {
    fn borrow(&self) -> &str {
        self.id()
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.id().cmp(other.id())
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (id, props) = self.split();
        write!(f, "{id}:{props}")
    }
}

/// Props by name, borrowed from ops: what several ops on one node come to.
type Merged<'o> = BTreeMap<&'o str, &'o Value>;

/// Writes the props object `old` (as an [`Entry`] holds it) with a `set` op's
/// props applied (`set` in name order): each listed prop replaced, a null one
/// removed. One pass over both, copying untouched props as they are, so the
/// cost is that of the node and the op, and names stay in order.
fn write_set<'v>(old: &str, set: impl Iterator<Item = (&'v str, &'v Value)>, out: &mut Vec<u8>) {
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

/// One `"name":value` of a stored props object, as written.
struct Member<'a> {
    raw: &'a str,
    /// The name's JSON string, quotes included.
    quoted: &'a str,
}

impl Member<'_> {
    /// The name itself: the text between the quotes unless it has escapes.
    fn name(&self) -> std::borrow::Cow<'_, str> {
        let inner = &self.quoted[1..self.quoted.len() - 1];
        match inner.contains('\\') {
            false => inner.into(),
            true => serde_json::from_str::<String>(self.quoted)
                .expect("stored names are valid JSON strings")
                .into(),
        }
    }
}

/// The members of a compact JSON object written by `serde_json` (no
/// whitespace, valid by construction), found by scanning, not parsing.
struct Members<'a> {
    text: &'a str,
    /// The `{` or `,` before the next member, or the closing `}`.
    at: usize,
}

impl<'a> Members<'a> {
    fn new(text: &'a str) -> Self {
        Members { text, at: 0 }
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        let b = self.text.as_bytes();
        if b[self.at] == b'}' || b[self.at + 1] == b'}' {
            return None;
        }
        let start = self.at + 1;
        let name_end = string_end(b, start) + 1;
        let end = value_end(b, name_end + 1);
        self.at = end;
        Some(Member {
            raw: &self.text[start..end],
            quoted: &self.text[start..name_end],
        })
    }
}

/// Index of the quote closing the JSON string whose opening quote is at `at`.
fn string_end(b: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    loop {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
}

/// Index of the `,` or `}` that ends the value starting at `at`.
fn value_end(b: &[u8], at: usize) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    loop {
        match b[i] {
            b'"' => i = string_end(b, i),
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return i,
            b']' | b'}' => depth -= 1,
            b',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
}

/// How to revert one applied op.
enum Undo<'o> {
    /// Put back this node, replacing whatever is at its id.
    Restore(Entry),
    /// Remove the node of this id (a put created it).
    Remove(&'o str),
}

/// A document: its nodes, each held as its compact JSON text (see [`Entry`]),
/// in id order, so serialization is concatenation and deterministic: equal
/// documents give byte-identical JSON, which makes snapshots comparable and
/// tests simple. A node costs its JSON text plus a few dozen bytes.
#[derive(Debug, Clone, Default)]
pub struct Document {
    nodes: BTreeSet<Entry>,
    /// Sum of `Entry::json_len` over nodes.
    entries_len: usize,
    /// Sum of `Entry::shortfall` over nodes.
    shortfall: usize,
}

/// Reads a document object straight from JSON text, one node at a time, so
/// the whole document never exists as a `Value`. The first rejected node's
/// error is kept in `failed` (serde's error only carries a message).
struct Loader<'a> {
    limits: &'a DocLimits,
    failed: &'a mut Option<PatchError>,
}

impl<'de> serde::de::Visitor<'de> for Loader<'_> {
    type Value = Document;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut doc = Document::new();
        while let Some(id) = map.next_key::<String>()? {
            let node: Value = map.next_value()?;
            if let Err(e) = doc.add_node(&id, node, self.limits) {
                let message = e.to_string();
                *self.failed = Some(e);
                return Err(serde::de::Error::custom(message));
            }
        }
        Ok(doc)
    }
}

impl Document {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a whole document, validating ids, prop names, depth and size.
    pub fn from_value(v: Value, limits: &DocLimits) -> Result<Self, PatchError> {
        let Value::Object(map) = v else {
            return Err(not_an_object());
        };
        let mut doc = Document::new();
        for (id, node) in map {
            doc.add_node(&id, node, limits)?;
        }
        doc.check_loaded(limits)?;
        Ok(doc)
    }

    /// Like [`Document::from_value`], reading the text one node at a time.
    pub fn from_json(bytes: &[u8], limits: &DocLimits) -> Result<Self, PatchError> {
        let mut failed = None;
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let loader = Loader {
            limits,
            failed: &mut failed,
        };
        let read = serde::Deserializer::deserialize_map(&mut de, loader)
            .and_then(|doc| de.end().map(|()| doc));
        match (read, failed) {
            (_, Some(e)) => Err(e),
            (Ok(doc), None) => doc.check_loaded(limits).map(|()| doc),
            (Err(e), None) if e.classify() == serde_json::error::Category::Data => {
                Err(not_an_object())
            }
            (Err(e), None) => Err(PatchError::Invalid(format!(
                "document is not valid JSON: {e}"
            ))),
        }
    }

    fn add_node(&mut self, id: &str, node: Value, limits: &DocLimits) -> Result<(), PatchError> {
        check_id(id).map_err(PatchError::Invalid)?;
        let Value::Object(props) = node else {
            return Err(PatchError::Invalid(format!("node {id} must be an object")));
        };
        check_props(&props, limits).map_err(|m| PatchError::Invalid(format!("node {id}: {m}")))?;
        self.insert_entry(Entry::new(id, &props));
        Ok(())
    }

    fn check_loaded(&self, limits: &DocLimits) -> Result<(), PatchError> {
        match self.charged_len() > limits.max_doc_bytes {
            true => Err(too_large(self.size_text("is"), limits.max_doc_bytes)),
            false => Ok(()),
        }
    }

    /// "document is N bytes", with how they were counted when small nodes
    /// made it more than the serialized length.
    fn size_text(&self, verb: &str) -> String {
        let charged = self.charged_len();
        match self.shortfall {
            0 => format!("document {verb} {charged} bytes"),
            _ => format!(
                "document {verb} {charged} bytes ({} serialized, each node counted as at least {MIN_NODE_BYTES})",
                self.serialized_len()
            ),
        }
    }

    /// Applies ops in order, all or none.
    ///
    /// The size limit is checked on the final state, so a patch may pass
    /// through a larger state as long as it ends within the limit. A patch
    /// that does not grow the document is accepted even if the document is
    /// already over the limit (e.g. after the limit was lowered), so clients
    /// can always delete their way back under it. Sizes are as the limit
    /// counts them ([`Document::charged_len`]).
    pub fn apply(&mut self, ops: &[Op], limits: &DocLimits) -> Result<(), PatchError> {
        check_count(ops.len(), limits)?;
        for (i, op) in ops.iter().enumerate() {
            op.validate(limits).map_err(|m| invalid_at(i, m))?;
        }
        let start_len = self.charged_len();
        // The ops grouped by node, each group in patch order (a stable sort):
        // nodes are independent, so applying group by group gives what op by
        // op would, and each touched node is rewritten once however many ops
        // name it (a patch of 1,000 sets on one large node copies it once).
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by_key(|&i| ops[i].id());
        let mut undo = Vec::new();
        for group in order.chunk_by(|&a, &b| ops[a].id() == ops[b].id()) {
            undo.extend(self.apply_group(group.iter().map(|&i| &ops[i])));
        }
        let end_len = self.charged_len();
        if end_len > limits.max_doc_bytes && end_len > start_len {
            let what = self.size_text("would be");
            self.rollback(undo);
            debug_assert_eq!(self.charged_len(), start_len);
            return Err(too_large(what, limits.max_doc_bytes));
        }
        Ok(())
    }

    /// Applies the ops of one node, in order, as one change; returns how to
    /// revert it, or None if it changed nothing.
    fn apply_group<'o>(&mut self, group: impl Iterator<Item = &'o Op>) -> Option<Undo<'o>> {
        /// Where the node stands after the ops so far.
        enum State<'o> {
            /// As stored (absent or not), with these sets on top.
            Stored(Vec<&'o Props>),
            /// Replaced by a put's props, with these sets on top.
            Put(&'o Props, Vec<&'o Props>),
            Deleted,
        }
        let mut id = "";
        let mut state = State::Stored(Vec::new());
        for op in group {
            id = op.id();
            match (op, &mut state) {
                (Op::Put { props, .. }, _) => state = State::Put(props, Vec::new()),
                (Op::Delete { .. }, _) => state = State::Deleted,
                (Op::Set { props, .. }, State::Stored(sets) | State::Put(_, sets)) => {
                    sets.push(props)
                }
                (Op::Set { .. }, State::Deleted) => {}
            }
        }
        let new = match state {
            State::Deleted => return self.remove_entry(id).map(Undo::Restore),
            State::Stored(sets) => {
                // Sets on a missing node do nothing.
                let old = self.nodes.get(id)?;
                let new = Entry::build(id, |out| {
                    // Room for the node as it was and then some, so a large
                    // node is not copied through doubling buffers.
                    out.reserve(old.0.len() * 9 / 8 + 256);
                    match sets.as_slice() {
                        [] => out.extend_from_slice(old.props_json().as_bytes()),
                        [one] => write_set(old.props_json(), props_iter(one), out),
                        _ => write_set(old.props_json(), merged(sets, None).into_iter(), out),
                    }
                });
                if new.0 == old.0 {
                    return None;
                }
                new
            }
            State::Put(props, sets) if sets.is_empty() => Entry::new(id, props),
            State::Put(props, sets) => Entry::build(id, |out| {
                let all = merged(sets, Some(props));
                serde_json::to_writer(out, &all).expect("JSON values always serialize")
            }),
        };
        Some(match self.insert_entry(new) {
            Some(prev) => Undo::Restore(prev),
            None => Undo::Remove(id),
        })
    }

    /// Reverts applied ops, newest first, so each step sees the state it
    /// was recorded against.
    fn rollback(&mut self, undo: Vec<Undo<'_>>) {
        for step in undo.into_iter().rev() {
            match step {
                Undo::Restore(entry) => {
                    self.insert_entry(entry);
                }
                Undo::Remove(id) => {
                    self.remove_entry(id);
                }
            }
        }
    }

    /// Inserts or replaces a node; returns the one it replaced.
    fn insert_entry(&mut self, entry: Entry) -> Option<Entry> {
        self.entries_len += entry.json_len();
        self.shortfall += entry.shortfall();
        let prev = self.nodes.replace(entry);
        if let Some(p) = &prev {
            self.entries_len -= p.json_len();
            self.shortfall -= p.shortfall();
        }
        prev
    }

    fn remove_entry(&mut self, id: &str) -> Option<Entry> {
        let entry = self.nodes.take(id)?;
        self.entries_len -= entry.json_len();
        self.shortfall -= entry.shortfall();
        Some(entry)
    }

    /// Compact JSON serialization: the nodes' texts, concatenated.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.serialized_len());
        out.push('{');
        for (i, entry) in self.nodes.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let (id, props) = entry.split();
            out.push('"');
            out.push_str(id);
            out.push_str("\":");
            out.push_str(props);
        }
        out.push('}');
        debug_assert_eq!(out.len(), self.serialized_len());
        out
    }

    pub fn to_value(&self) -> Value {
        let nodes = self.nodes.iter();
        Value::Object(
            nodes
                .map(|e| (e.id().to_owned(), Value::Object(e.props())))
                .collect(),
        )
    }

    /// Always equal to `self.to_json().len()`, in O(1).
    pub fn serialized_len(&self) -> usize {
        2 + self.entries_len + self.nodes.len().saturating_sub(1)
    }

    /// The size the document limit is checked against, in O(1): the
    /// serialized length, with each node's `"id":{...}` counted as at least
    /// [`MIN_NODE_BYTES`].
    pub fn charged_len(&self) -> usize {
        self.serialized_len() + self.shortfall
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// A node's props (parsed from its text: a copy, not a view).
    pub fn get(&self, id: &str) -> Option<Props> {
        self.nodes.get(id).map(Entry::props)
    }
}

fn props_iter(props: &Props) -> impl Iterator<Item = (&str, &Value)> {
    props.iter().map(|(k, v)| (k.as_str(), v))
}

/// Several sets on one node as one: the last value of each name wins. On top
/// of a put's props (`base`), a null removes the prop; on their own, nulls are
/// kept, since they remove props when the result is applied as a set.
fn merged<'o>(sets: Vec<&'o Props>, base: Option<&'o Props>) -> Merged<'o> {
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

fn not_an_object() -> PatchError {
    PatchError::Invalid("document must be a JSON object".into())
}

/// Serializes as the plain `{"id": {props}}` object, each node's stored text
/// passed through as it is (no intermediate `Value`).
impl serde::Serialize for Document {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.nodes.iter().map(|e| {
            let raw: &serde_json::value::RawValue =
                serde_json::from_str(e.props_json()).expect("stored props are valid JSON");
            (e.id(), raw)
        }))
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
        assert_eq!(d.get("a").as_ref(), json!({"x": 5}).as_object());
        // Several ops on one node in one patch, around a delete and a put.
        let p = json!([
            set("a", json!({"x": 6, "k": 1})),
            set("b", json!({"w": null, "v": [1]})),
            set("a", json!({"x": null, "z": "z"})),
            {"op": "delete", "id": "a"},
            set("a", json!({"x": 7})),
            put("a", json!({"p": 1, "q": 2})),
            set("a", json!({"q": null, "r": 3})),
            set("a", json!({"r": null, "s": null, "t": {}})),
            set("c", json!({"x": 1})),
        ]);
        patch(&mut d, p).unwrap();
        assert_eq!(d.to_json(), r#"{"a":{"p":1,"t":{}},"b":{"v":[1]}}"#,);
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
        // `q"` sorts before `q#` but its escaped text `q\"` after: names are
        // kept in the order of the names, not of their JSON.
        const NAMES: [&str; 9] = ["x", "y", "fill", "név", "q\"", "q#", "\u{7}", "a\\", "~"];
        let n = r.below(4);
        (0..n)
            .map(|_| (NAMES[r.below(9)].to_owned(), random_value(r, depth)))
            .collect()
    }

    /// The reference: nodes as plain maps of props.
    type Model = std::collections::BTreeMap<String, Props>;

    fn model_apply(model: &mut Model, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Put { id, props } => {
                    model.insert(id.clone(), props.clone());
                }
                Op::Set { id, props } => {
                    if let Some(node) = model.get_mut(id) {
                        for (k, v) in props {
                            match v.is_null() {
                                true => node.remove(k),
                                false => node.insert(k.clone(), v.clone()),
                            };
                        }
                    }
                }
                Op::Delete { id } => {
                    model.remove(id);
                }
            }
        }
    }

    /// The size rule, computed from scratch.
    fn model_charged(model: &Model) -> usize {
        let json = serde_json::to_string(model).unwrap().len();
        let small = model.iter().map(|(id, props)| {
            let entry = id.len() + 3 + serde_json::to_string(props).unwrap().len();
            MIN_NODE_BYTES.saturating_sub(entry)
        });
        json + small.sum::<usize>()
    }

    #[test]
    fn serialized_len_matches_over_random_ops() {
        let mut r = Lcg(42);
        let mut d = Document::new();
        let mut model = Model::new();
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
                limits.max_doc_bytes = d.charged_len() + r.below(40);
            }
            let before = d.to_json();
            match d.apply(&patch, &limits) {
                Ok(()) => {
                    applied += patch.len();
                    model_apply(&mut model, &patch);
                }
                Err(e) => {
                    assert_eq!(e.code(), "too-large");
                    assert_eq!(d.to_json(), before);
                    rejected += 1;
                }
            }
            assert_eq!(d.serialized_len(), d.to_json().len(), "round {round}");
            let json = serde_json::to_string(&model).unwrap();
            assert_eq!(d.to_json(), json, "round {round}");
            assert_eq!(d.charged_len(), model_charged(&model), "round {round}");
            if round % 50 == 0 {
                let back = Document::from_json(d.to_json().as_bytes(), &lim()).unwrap();
                assert_eq!(back.to_json(), d.to_json());
            }
        }
        assert!(applied > 300 && rejected > 10, "{applied} {rejected}");
    }

    /// The hot path, timed (not asserted): 100,000 one-op patches that set
    /// `x` and `y` of a ten-prop shape, as a drag does, on a document of
    /// 10,000 shapes. `cargo test --release -p atrium-node --lib -- --ignored
    /// bench_small_sets --nocapture`.
    #[test]
    #[ignore]
    fn bench_small_sets() {
        let mut d = Document::new();
        let shape = |i: usize| {
            json!({"fill": "#3a7bd5", "h": 120.5, "name": format!("rect {i}"), "page": "p1",
                   "rotation": 0, "stroke": "#1e1e1e", "type": "rect", "w": 240.25,
                   "x": i as f64 * 1.5, "y": -220.75})
        };
        for chunk in (0..10_000).collect::<Vec<_>>().chunks(1000) {
            let p: Vec<Value> = chunk
                .iter()
                .map(|&i| put(&format!("shape-{i:05}"), shape(i)))
                .collect();
            d.apply(&ops(Value::Array(p)), &lim()).unwrap();
        }
        let patches: Vec<Vec<Op>> = (0..100_000)
            .map(|k| {
                let id = format!("shape-{:05}", (k * 7919) % 10_000);
                ops(json!([set(
                    &id,
                    json!({"x": k as f64 + 0.25, "y": -(k as f64)})
                )]))
            })
            .collect();
        let start = std::time::Instant::now();
        for p in &patches {
            d.apply(p, &lim()).unwrap();
        }
        let took = start.elapsed();
        eprintln!(
            "BENCH 100000 set patches: {:.1} ms, {:.0} ns a patch",
            took.as_secs_f64() * 1e3,
            took.as_nanos() as f64 / 100_000.0
        );
        assert_eq!(d.serialized_len(), d.to_json().len());
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
        assert_eq!((back.node_count(), back.get("n2")), (2, Some(Map::new())));
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
