//! The events, as the JSON bodies the Standard Webhooks specification recommends:
//! `{"type": ..., "timestamp": ..., "data": {...}}`, with `file_id` in every `data`.

use serde_json::{json, Value};

use crate::ids::{random_string, FileId};
use crate::store::WebhookEvent;

/// A fresh message id (`webhook-id`): `msg_` and 22 random base62 characters.
pub fn msg_id() -> String {
    format!("msg_{}", random_string(22))
}

/// One event of `file`, of type `kind`, at `at` (Unix ms), with `data` (to which the
/// file's id is added).
pub fn event(file: &FileId, kind: &'static str, at: i64, mut data: Value) -> WebhookEvent {
    if let Value::Object(map) = &mut data {
        map.insert("file_id".into(), json!(file.as_str()));
    }
    let body = json!({"type": kind, "timestamp": rfc3339_ms(at), "data": data});
    WebhookEvent {
        file: file.clone(),
        kind,
        msg_id: msg_id(),
        body: body.to_string(),
        at,
    }
}

/// `file.updated`: the file's durable version after an append (debounced by the outbox).
pub fn file_updated(file: &FileId, version: u64, at: i64) -> WebhookEvent {
    event(file, "file.updated", at, json!({"version": version}))
}

/// `file.updated` for every append of a batch that landed (`results` in the batch's order).
pub fn files_updated(
    batch: &[crate::store::FileAppend],
    results: &[crate::store::StoreResult<()>],
    at: i64,
) -> Vec<WebhookEvent> {
    batch
        .iter()
        .zip(results)
        .filter(|(_, r)| r.is_ok())
        .filter_map(|(a, _)| Some(file_updated(&a.file, a.patches.last()?.version, at)))
        .collect()
}

/// `version.created`: a version of the file was saved, with the id the store gave it.
pub fn version_created(file: &FileId, id: u64, info: &crate::history::VersionInfo) -> WebhookEvent {
    let data = json!({
        "version_id": id,
        "version": info.version,
        "kind": info.kind.as_str(),
        "title": info.title,
        "created_at": rfc3339_ms(info.created_at),
    });
    event(file, "version.created", info.created_at, data)
}

/// A Unix time in ms as RFC 3339 in UTC with milliseconds, e.g. `2026-12-03T18:58:30.123Z`.
pub fn rfc3339_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 as (year, month, day), by Howard Hinnant's civil calendar rule.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_in_utc() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_796_324_310_123), "2026-12-03T18:58:30.123Z");
    }

    #[test]
    fn bodies_carry_type_timestamp_and_the_file() {
        let file = FileId::parse("f1").unwrap();
        let e = file_updated(&file, 7, 0);
        let v: Value = serde_json::from_str(&e.body).unwrap();
        assert_eq!(v["type"], "file.updated");
        assert_eq!(v["data"]["file_id"], "f1");
        assert_eq!(v["data"]["version"], 7);
        assert!(e.msg_id.starts_with("msg_") && e.msg_id.len() == 26);
    }
}
