//! The socket's messages (PROTOCOL.md, "The socket"): parsing what clients send,
//! encoding what the node sends. Parsing never panics and never trusts sizes: a
//! message that breaks the contract becomes a [`Refusal`] with the contract's code.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::doc::{parse_ops, DocLimits, Op, PatchError};
use crate::ids::is_valid_id;

/// Longest guest name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Most ids in a presence selection.
pub const MAX_SELECTION: usize = 100;
/// Longest text of a `t` (a sender's clock, echoed and relayed verbatim). Any finite
/// double fits in 24 characters in its shortest form; the rest is room for how
/// clients print them. Every field the node relays to others is bounded like this.
pub const MAX_T_CHARS: usize = 32;

#[derive(Debug)]
pub struct Hello {
    pub token: Option<String>,
    pub key: Option<String>,
    pub client: String,
    pub since: Option<u64>,
    pub name: Option<String>,
}

#[derive(Debug)]
pub struct Patch {
    pub id: u64,
    pub ops: Vec<Op>,
    /// The ops as compact JSON, relayed and logged as is.
    pub ops_json: String,
    /// The sender's `t`, verbatim.
    pub t: Option<String>,
}

/// A presence update: each field is `None` when left out (keeps its last value).
#[derive(Debug, Default, Clone)]
pub struct PresenceUpdate {
    pub page: Option<Option<String>>,
    pub cursor: Option<Option<[f64; 2]>>,
    pub sel: Option<Option<Vec<String>>>,
    pub camera: Option<Option<[f64; 3]>>,
    pub t: Option<String>,
    /// Bytes the message took on the wire (compressed, when it was): what the
    /// sender paid for it, which bounds what the room relays for it.
    pub wire_bytes: usize,
}

#[derive(Debug)]
pub enum ClientMessage {
    Hello(Hello),
    Patch(Patch),
    Presence(PresenceUpdate),
}

/// Why a message was refused: answered with a `reject`.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub id: Option<u64>,
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn invalid_before_hello() -> Self {
        Self::invalid(None, "the first message must be a hello")
    }

    fn invalid(id: Option<u64>, message: impl Into<String>) -> Self {
        Refusal {
            id,
            code: "invalid",
            message: message.into(),
        }
    }
}

type Fields<'a> = HashMap<String, &'a RawValue>;

/// A field that may be missing or null (both `None`).
fn field<T: serde::de::DeserializeOwned>(
    fields: &Fields<'_>,
    name: &str,
) -> Result<Option<T>, String> {
    match fields.get(name) {
        None => Ok(None),
        Some(raw) => serde_json::from_str::<Option<T>>(raw.get())
            .map_err(|_| format!("`{name}` has the wrong type")),
    }
}

/// A JSON number, kept as its exact text, at most [`MAX_T_CHARS`] long.
fn number_text(fields: &Fields<'_>, name: &str) -> Result<Option<String>, String> {
    let Some(raw) = fields.get(name) else {
        return Ok(None);
    };
    let text = raw.get();
    if text == "null" {
        return Ok(None);
    }
    if text.len() > MAX_T_CHARS {
        return Err(format!("`{name}` is at most {MAX_T_CHARS} characters"));
    }
    match serde_json::from_str::<f64>(text) {
        Ok(n) if n.is_finite() && !text.starts_with('"') => Ok(Some(text.to_owned())),
        _ => Err(format!("`{name}` must be a finite number")),
    }
}

/// What a message is, from its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Hello,
    Patch,
    Presence,
}

/// A message read as far as its type: its fields are still unparsed JSON text,
/// borrowed from the frame, so reading one costs a scan and no copies.
pub struct Message<'a> {
    pub kind: Kind,
    fields: Fields<'a>,
}

/// Reads a frame as far as its type.
pub fn read(text: &str) -> Result<Message<'_>, Refusal> {
    let fields: Fields<'_> = serde_json::from_str(text)
        .map_err(|_| Refusal::invalid(None, "a message must be a JSON object"))?;
    let kind: String = field(&fields, "type")
        .ok()
        .flatten()
        .ok_or_else(|| Refusal::invalid(None, "a message needs a string `type`"))?;
    let kind = match kind.as_str() {
        "hello" => Kind::Hello,
        "patch" => Kind::Patch,
        "presence" => Kind::Presence,
        _ => return Err(Refusal::invalid(None, "unknown message type")),
    };
    Ok(Message { kind, fields })
}

impl Message<'_> {
    /// The whole message, checked against the contract and the limits.
    pub fn parse(&self, limits: &DocLimits) -> Result<ClientMessage, Refusal> {
        match self.kind {
            Kind::Hello => parse_hello(&self.fields).map(ClientMessage::Hello),
            Kind::Patch => parse_patch(&self.fields, limits).map(ClientMessage::Patch),
            Kind::Presence => parse_presence(&self.fields)
                .map(ClientMessage::Presence)
                .map_err(|m| Refusal::invalid(None, m)),
        }
    }

    /// The refusal of a patch from someone who may not edit: its id is all that is
    /// read, so its ops cost nothing.
    pub fn refuse(&self, code: &'static str, message: &str) -> Refusal {
        Refusal {
            id: patch_id(&self.fields),
            code,
            message: message.into(),
        }
    }
}

/// Parses one text frame.
pub fn parse(text: &str, limits: &DocLimits) -> Result<ClientMessage, Refusal> {
    read(text)?.parse(limits)
}

fn parse_hello(fields: &Fields<'_>) -> Result<Hello, Refusal> {
    let bad = |m: String| Refusal::invalid(None, m);
    let token: Option<String> = field(fields, "token").map_err(bad)?;
    let key: Option<String> = field(fields, "key").map_err(bad)?;
    let client: String = field(fields, "client")
        .map_err(bad)?
        .ok_or_else(|| bad("hello needs a `client` id".into()))?;
    if !is_valid_id(&client) {
        return Err(bad("`client` must match [A-Za-z0-9_-]{1,64}".into()));
    }
    let since: Option<u64> = field(fields, "since")
        .map_err(|_| bad("`since` must be a version number or null".into()))?;
    let name: Option<String> = field(fields, "name").map_err(bad)?;
    let name = name.map(|n| clean_name(&n));
    Ok(Hello {
        token: token.filter(|t| !t.is_empty()),
        key: key.filter(|k| !k.is_empty()),
        client,
        since,
        name,
    })
}

/// A guest name as plain text: at most 64 characters, with no control characters and
/// nothing invisible that could change how other names look (bidi overrides and
/// isolates, zero-width characters, fillers), and runs of spaces made one space. A
/// guest must not be able to look like someone else.
pub fn clean_name(name: &str) -> String {
    let mut out = String::new();
    let mut space = false;
    for c in name.chars() {
        if c.is_control() || is_invisible(c) {
            continue;
        }
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out.chars()
        .take(MAX_NAME_CHARS)
        .collect::<String>()
        .trim_end()
        .to_owned()
}

/// Format characters (Unicode category Cf) and other characters that print as
/// nothing: bidi embeddings, overrides, isolates and marks, zero-width spaces and
/// joiners, the soft hyphen, word joiners, tags, and the Hangul fillers.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{0600}'..='\u{0605}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

fn patch_id(fields: &Fields<'_>) -> Option<u64> {
    fields
        .get("id")
        .and_then(|raw| serde_json::from_str::<u64>(raw.get()).ok())
        .filter(|id| *id > 0)
}

fn parse_patch(fields: &Fields<'_>, limits: &DocLimits) -> Result<Patch, Refusal> {
    let Some(id) = patch_id(fields) else {
        return Err(Refusal::invalid(
            None,
            "a patch needs `id`, a positive integer",
        ));
    };
    let t = number_text(fields, "t").map_err(|m| Refusal::invalid(Some(id), m))?;
    let raw_ops = fields
        .get("ops")
        .ok_or_else(|| Refusal::invalid(Some(id), "a patch needs `ops`"))?;
    let value: Value = serde_json::from_str(raw_ops.get())
        .map_err(|_| Refusal::invalid(Some(id), "`ops` is not valid JSON"))?;
    let ops = parse_ops(&value, limits).map_err(|e| Refusal {
        id: Some(id),
        code: e.code(),
        message: match e {
            PatchError::Invalid(m) | PatchError::TooLarge(m) => m,
        },
    })?;
    Ok(Patch {
        id,
        ops,
        ops_json: value.to_string(),
        t,
    })
}

fn pair<const N: usize>(
    fields: &Fields<'_>,
    name: &str,
) -> Result<Option<Option<[f64; N]>>, String> {
    let Some(raw) = fields.get(name) else {
        return Ok(None);
    };
    let value: Option<Vec<f64>> = serde_json::from_str(raw.get())
        .map_err(|_| format!("`{name}` must be {N} numbers or null"))?;
    match value {
        None => Ok(Some(None)),
        Some(v) => <[f64; N]>::try_from(v)
            .map(|a| Some(Some(a)))
            .map_err(|_| format!("`{name}` must be {N} numbers or null")),
    }
}

fn parse_presence(fields: &Fields<'_>) -> Result<PresenceUpdate, String> {
    let page = match fields.get("page") {
        None => None,
        Some(raw) => {
            let page: Option<String> = serde_json::from_str(raw.get())
                .map_err(|_| "`page` must be an id or null".to_owned())?;
            if page.as_deref().is_some_and(|p| !is_valid_id(p)) {
                return Err("`page` must be an id".into());
            }
            Some(page)
        }
    };
    let sel = match fields.get("sel") {
        None => None,
        Some(raw) => {
            let sel: Option<Vec<String>> = serde_json::from_str(raw.get())
                .map_err(|_| "`sel` must be a list of ids or null".to_owned())?;
            if let Some(ids) = &sel {
                if ids.len() > MAX_SELECTION {
                    return Err(format!("`sel` holds at most {MAX_SELECTION} ids"));
                }
                if !ids.iter().all(|i| is_valid_id(i)) {
                    return Err("`sel` must hold ids".into());
                }
            }
            Some(sel)
        }
    };
    Ok(PresenceUpdate {
        page,
        cursor: pair::<2>(fields, "cursor")?,
        sel,
        camera: pair::<3>(fields, "camera")?,
        t: number_text(fields, "t")?,
        wire_bytes: 0,
    })
}

// ---- What the node sends ------------------------------------------------------

fn with_t(mut body: String, t: Option<&str>) -> String {
    if let Some(t) = t {
        body.push_str(",\"t\":");
        body.push_str(t);
    }
    body.push('}');
    body
}

/// `{"type":"ack","id","v","t"?}` for the sender of a patch.
pub fn ack(id: u64, v: u64, t: Option<&str>) -> String {
    with_t(format!("{{\"type\":\"ack\",\"id\":{id},\"v\":{v}"), t)
}

/// `{"type":"patch","v","by","ops","t"?}` for everyone else in the file.
pub fn relay(v: u64, by: &str, ops_json: &str, t: Option<&str>) -> String {
    // `by` is an id (checked characters), so it needs no escaping.
    with_t(
        format!("{{\"type\":\"patch\",\"v\":{v},\"by\":\"{by}\",\"ops\":{ops_json}"),
        t,
    )
}

pub fn reject(refusal: &Refusal) -> String {
    json!({"type": "reject", "id": refusal.id, "code": refusal.code, "message": refusal.message})
        .to_string()
}

pub fn notice(code: u16, message: &str) -> String {
    json!({"type": "notice", "code": code, "message": message}).to_string()
}

#[cfg(test)]
mod tests;
