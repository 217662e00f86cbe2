//! Building a document from a whole JSON object.

use serde_json::Value;

use super::entry::Entry;
use super::op::{check_id, check_props, node_too_large, too_large};
use super::{DocLimits, Document, PatchError};

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
            // Parsed values cost many times their text (30x for an array of small numbers):
            // a node's text is measured before it is parsed, so building a document takes
            // at most one bounded node's worth beyond the document itself.
            let raw: &'de serde_json::value::RawValue = map.next_value()?;
            let node = if raw.get().len() > self.limits.max_node_bytes {
                Err(node_too_large(&id, self.limits.max_node_bytes))
            } else {
                Ok(serde_json::from_str::<Value>(raw.get()).map_err(serde::de::Error::custom)?)
            };
            if let Err(e) = node.and_then(|node| doc.add_node(&id, node, self.limits)) {
                let message = e.to_string();
                *self.failed = Some(e);
                return Err(serde::de::Error::custom(message));
            }
        }
        Ok(doc)
    }
}
impl Document {
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
            // A fixed sentence: the parser's own text is no business of the caller's.
            (Err(_), None) => Err(PatchError::Invalid(
                "document is not valid JSON (or nested deeper than JSON may be here)".into(),
            )),
        }
    }

    fn add_node(&mut self, id: &str, node: Value, limits: &DocLimits) -> Result<(), PatchError> {
        check_id(id).map_err(PatchError::Invalid)?;
        let Value::Object(props) = node else {
            return Err(PatchError::Invalid(format!("node {id} must be an object")));
        };
        check_props(&props, limits).map_err(|m| PatchError::Invalid(format!("node {id}: {m}")))?;
        // Read as text, an object may name a node twice; which one it meant is not ours to guess.
        match self.insert_entry(Entry::new(id, &props)) {
            Some(_) => Err(PatchError::Invalid(format!("node {id} appears twice"))),
            None => Ok(()),
        }
    }

    fn check_loaded(&self, limits: &DocLimits) -> Result<(), PatchError> {
        match self.charged_len() > limits.max_doc_bytes {
            true => Err(too_large(self.size_text("is"), limits.max_doc_bytes)),
            false => Ok(()),
        }
    }
}

pub(super) fn not_an_object() -> PatchError {
    PatchError::Invalid("document must be a JSON object".into())
}
