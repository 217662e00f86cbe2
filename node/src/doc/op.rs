//! A patch's ops: read from JSON and checked against the limits.

use serde_json::{Map, Value};

use super::{DocLimits, PatchError};

/// Props of one node, in name order (serde_json's default `Map`).
pub type Props = Map<String, Value>;

/// Node ids are `[A-Za-z0-9_-]{1,64}`: safe in URLs, file names and logs.
const MAX_ID_LEN: usize = 64;

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
            return Err(format!("unexpected field {} in {kind} op", shown(extra)));
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
    pub(super) fn validate(&self, limits: &DocLimits) -> Result<(), String> {
        match self {
            Op::Put { id, props } | Op::Set { id, props } => {
                check_id(id)?;
                check_props(props, limits)
            }
            Op::Delete { id } => check_id(id),
        }
    }
}

/// A patch's `ops` read from their text one op at a time, and written back compact (as a
/// parsed array would be): a patch is refused at its first bad op before the ops after it
/// are made into values, and an over-long list before any is. Read whole, a 60 KB patch of
/// `[[0,0,…],…]` became 30,000 values only to be refused, and at one address's byte rate
/// that kept both cores of a debug node busy.
pub fn parse_ops_text(text: &str, limits: &DocLimits) -> Result<(Vec<Op>, String), OpsError> {
    use serde::de::Deserializer;
    let mut reader = serde_json::Deserializer::from_str(text);
    let texts = reader
        .deserialize_any(ListOps {
            most: limits.max_ops,
        })
        .and_then(|texts| reader.end().map(|()| texts))
        .map_err(|_| OpsError::NotJson)?;
    let texts = match texts {
        OpTexts::Listed(texts) => texts,
        OpTexts::Counted(n) => return Err(check_count(n, limits).unwrap_err().into()),
        OpTexts::NotAList => return Err(PatchError::Invalid("ops must be an array".into()).into()),
    };
    let mut ops = Vec::with_capacity(texts.len());
    let mut json = String::new();
    for (i, op) in texts.iter().enumerate() {
        let value: Value = serde_json::from_str(op.get()).map_err(|_| OpsError::NotJson)?;
        ops.push(parse_op(i, &value, limits)?);
        // Room for the whole text once the first op is good: a patch refused at its first op
        // holds none.
        json.reserve(text.len() + 2);
        json.push(if i == 0 { '[' } else { ',' });
        json.push_str(&value.to_string());
    }
    if json.is_empty() {
        json.push('[');
    }
    json.push(']');
    Ok((ops, json))
}

/// Why a patch's `ops` text was refused.
#[derive(Debug)]
pub enum OpsError {
    NotJson,
    Patch(PatchError),
}

impl From<PatchError> for OpsError {
    fn from(e: PatchError) -> Self {
        OpsError::Patch(e)
    }
}

/// The `ops` value as the texts of its elements; past `most` of them only counted (each
/// skipped without being built); or not an array at all.
enum OpTexts<'a> {
    Listed(Vec<&'a serde_json::value::RawValue>),
    Counted(usize),
    NotAList,
}

/// Reads [`OpTexts`], keeping at most `most` texts.
struct ListOps {
    most: usize,
}

impl<'de> serde::de::Visitor<'de> for ListOps {
    type Value = OpTexts<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut texts = Vec::new();
        while let Some(op) = seq.next_element::<&'de serde_json::value::RawValue>()? {
            if texts.len() == self.most {
                let mut n = self.most + 1;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                return Ok(OpTexts::Counted(n));
            }
            texts.push(op);
        }
        Ok(OpTexts::Listed(texts))
    }

    // Any other value is valid JSON that is not a list: skipped, then refused as such.
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::IgnoredAny;
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(OpTexts::NotAList)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(OpTexts::NotAList)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(OpTexts::NotAList)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(OpTexts::NotAList)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(OpTexts::NotAList)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(OpTexts::NotAList)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(OpTexts::NotAList)
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
        .map(|(i, v)| parse_op(i, v, limits))
        .collect()
}

/// The `i`th op of a patch, read and checked against the limits.
fn parse_op(i: usize, v: &Value, limits: &DocLimits) -> Result<Op, PatchError> {
    let op = Op::parse(v).map_err(|m| invalid_at(i, m))?;
    op.validate(limits).map_err(|m| invalid_at(i, m))?;
    Ok(op)
}

pub(super) fn invalid_at(index: usize, msg: String) -> PatchError {
    PatchError::Invalid(format!("op {index}: {msg}"))
}

pub(super) fn too_large(what: String, limit: usize) -> PatchError {
    PatchError::TooLarge(format!("{what}, limit is {limit}"))
}

/// A node larger than [`DocLimits::max_node_bytes`].
pub(super) fn node_too_large(id: &str, limit: usize) -> PatchError {
    too_large(
        format!("node {id} is larger than one message can carry"),
        limit,
    )
}

pub(super) fn check_count(n: usize, limits: &DocLimits) -> Result<(), PatchError> {
    match n > limits.max_ops {
        true => Err(too_large(format!("patch has {n} ops"), limits.max_ops)),
        false => Ok(()),
    }
}

/// A name the client sent, as a message back may show it: quoted when it is short and plain,
/// else not at all. A reject goes to the sender, but one that repeated any name it was sent
/// would be larger than what was sent (escaped, a byte can take seven), and before hello
/// nobody needs a key to send a patch.
fn shown(name: &str) -> String {
    const SHOWN_CHARS: usize = 32;
    let plain =
        name.len() <= SHOWN_CHARS && name.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
    match plain {
        true => format!("{name:?}"),
        false => "(a name too long or odd to repeat)".to_owned(),
    }
}

pub(super) fn check_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    // The id itself is not echoed: it is untrusted and possibly huge.
    ok.then_some(())
        .ok_or_else(|| "node id must match [A-Za-z0-9_-]{1,64}".into())
}

pub(super) fn check_props(props: &Props, limits: &DocLimits) -> Result<(), String> {
    for (name, value) in props {
        if name.len() > limits.max_prop_name {
            return Err(format!(
                "prop name longer than {} bytes",
                limits.max_prop_name
            ));
        }
        if depth_exceeds(value, limits.max_depth) {
            return Err(format!(
                "prop {} nested deeper than {}",
                shown(name),
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
