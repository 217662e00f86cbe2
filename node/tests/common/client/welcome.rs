//! Reading a welcome: the person id, the own entry, ids.

use super::*;

/// The person id from a welcome.
pub fn you(welcome: &Value) -> String {
    s(&welcome["you"]).to_string()
}

/// The welcomed person's own entry in the welcome's `people`.
pub fn own_entry(welcome: &Value) -> Value {
    welcome["people"]
        .as_array()
        .unwrap_or_else(|| panic!("welcome without people: {welcome}"))
        .iter()
        .find(|p| p["id"] == welcome["you"])
        .unwrap_or_else(|| panic!("the joiner is not listed: {welcome}"))
        .clone()
}

/// Asserts that a string looks like an id.
pub fn assert_id(v: &Value) {
    let id = s(v);
    assert!(
        !id.is_empty()
            && id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "not an id: {id:?}"
    );
}
