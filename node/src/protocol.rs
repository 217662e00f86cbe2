//! The socket's messages (docs/protocol.md, "The socket"): parsing what clients send,
//! encoding what the node sends. Parsing never panics and never trusts sizes: a
//! message that breaks the contract becomes a [`Refusal`] with the contract's code.

mod edits;
mod fields;
mod hello;
mod outgoing;

pub use hello::{clean_name, is_deceptive, is_shaping};
pub use outgoing::{ack, notice, reject, relay};

use self::edits::{parse_patch, parse_presence, patch_id};
use self::fields::{field, Fields};
use self::hello::parse_hello;
use crate::doc::{DocLimits, Op};

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
    /// A fresh app token for the socket (`refresh`).
    Refresh(String),
    /// A broadcast event: its `data`, as compact JSON (`event`).
    Event(String),
}

/// Longest token a `refresh` may carry (bytes): app tokens are a few hundred.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

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

/// What a message is, from its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Hello,
    Patch,
    Presence,
    Refresh,
    Event,
}

/// A message read as far as its type: its fields are still unparsed JSON text,
/// borrowed from the frame, so reading one costs a scan and no copies.
pub struct Message<'a> {
    pub kind: Kind,
    fields: Fields<'a>,
}

impl Message<'_> {
    /// How many bytes a field took as sent, before any parsing (`None`: absent).
    pub fn raw_len(&self, name: &str) -> Option<usize> {
        self.fields.get(name).map(|raw| raw.get().len())
    }
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
        "refresh" => Kind::Refresh,
        "event" => Kind::Event,
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
            Kind::Event => {
                // Any JSON value, null included; relayed as compact JSON.
                let data = self
                    .fields
                    .get("data")
                    .and_then(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).ok());
                match data {
                    Some(d) => Ok(ClientMessage::Event(d.to_string())),
                    None => Err(Refusal::invalid(None, "an event needs `data`")),
                }
            }
            Kind::Refresh => {
                let token: Option<String> =
                    field(&self.fields, "token").map_err(|m| Refusal::invalid(None, m))?;
                match token {
                    Some(t) if !t.is_empty() && t.len() <= MAX_TOKEN_BYTES => {
                        Ok(ClientMessage::Refresh(t))
                    }
                    _ => Err(Refusal::invalid(
                        None,
                        "refresh needs a `token` of at most 8 KiB",
                    )),
                }
            }
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

#[cfg(test)]
mod tests;
