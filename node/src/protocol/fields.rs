//! A message's fields as unparsed JSON text, and the typed readers of them.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::MAX_T_CHARS;

/// A message's top-level fields: names (borrowed from the frame unless escaped)
/// and their values as unparsed JSON. A message has a handful, so a list searched
/// in order costs less than a hash map of owned names; a repeated name counts
/// by its last value, as in a map.
pub(super) struct Fields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Fields<'a> {
    pub(super) fn get(&self, name: &str) -> Option<&&'a RawValue> {
        self.0.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(4).min(8));
                while let Some(entry) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Object)
    }
}

/// A field that may be missing or null (both `None`).
pub(super) fn field<T: serde::de::DeserializeOwned>(
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
pub(super) fn number_text(fields: &Fields<'_>, name: &str) -> Result<Option<String>, String> {
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

pub(super) fn pair<const N: usize>(
    fields: &Fields<'_>,
    name: &str,
) -> Result<Option<Option<[f64; N]>>, String> {
    let Some(raw) = fields.get(name) else {
        return Ok(None);
    };
    serde_json::from_str::<Option<Numbers<N>>>(raw.get())
        .map(|v| Some(v.map(|n| n.0)))
        .map_err(|_| format!("`{name}` must be {N} numbers or null"))
}

/// Exactly `N` numbers, read into an array with no list in between.
struct Numbers<const N: usize>([f64; N]);

impl<'de, const N: usize> Deserialize<'de> for Numbers<N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Exactly<const N: usize>;
        impl<'de, const N: usize> Visitor<'de> for Exactly<N> {
            type Value = Numbers<N>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{N} numbers")
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                mut seq: S,
            ) -> Result<Self::Value, S::Error> {
                let mut out = [0.0; N];
                for (i, slot) in out.iter_mut().enumerate() {
                    *slot = seq
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                }
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(N + 1, &self));
                }
                Ok(Numbers(out))
            }
        }
        deserializer.deserialize_seq(Exactly::<N>)
    }
}
