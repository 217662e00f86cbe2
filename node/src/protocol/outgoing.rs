//! What the node sends: acks, relayed patches, rejects and notices.

use serde_json::json;

use super::Refusal;

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
