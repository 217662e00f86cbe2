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
