//! A message's fields as unparsed JSON text, and the typed readers of them.

use std::collections::HashMap;

use serde_json::value::RawValue;

use super::MAX_T_CHARS;

pub(super) type Fields<'a> = HashMap<String, &'a RawValue>;

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
    let value: Option<Vec<f64>> = serde_json::from_str(raw.get())
        .map_err(|_| format!("`{name}` must be {N} numbers or null"))?;
    match value {
        None => Ok(Some(None)),
        Some(v) => <[f64; N]>::try_from(v)
            .map(|a| Some(Some(a)))
            .map_err(|_| format!("`{name}` must be {N} numbers or null")),
    }
}
