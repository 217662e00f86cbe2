//! The node's messages as the client reads them: only the fields it looks into.

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::measure::Measures;

#[derive(Deserialize)]
pub(super) struct Welcome {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) you: String,
    #[serde(default)]
    pub(super) role: String,
    #[serde(default)]
    pub(super) version: u64,
    #[serde(default)]
    pub(super) presence_hz: Option<f64>,
}

/// The fields of the messages the client looks into.
#[derive(Deserialize)]
pub(super) struct Incoming {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) v: Option<u64>,
    #[serde(default)]
    pub(super) t: Option<f64>,
    #[serde(default)]
    pub(super) by: Option<String>,
    #[serde(default)]
    pub(super) id: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) role: Option<String>,
    #[serde(default)]
    pub(super) code: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) hz: Option<f64>,
}

#[derive(Deserialize)]
pub(super) struct Presences {
    pub(super) people: Vec<PresenceEntry>,
}

#[derive(Deserialize)]
pub(super) struct PresenceEntry {
    #[serde(default)]
    pub(super) cursor: Option<IgnoredAny>,
    #[serde(default)]
    pub(super) t: Option<f64>,
}

/// Records the latency of every full entry (people on the same page) of a presences message.
pub(super) fn record_presences(m: &Measures, text: &str) {
    let Ok(p) = serde_json::from_str::<Presences>(text) else {
        return;
    };
    for entry in p.people {
        if let (Some(_), Some(t)) = (entry.cursor, entry.t) {
            m.record_since(&m.presence, t);
        }
    }
}
