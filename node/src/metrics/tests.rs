use atrium_protocol::CloseCode;

use super::*;

/// A fresh node exports every fixed-label series at 0, so "no data" never means "none".
#[test]
fn fixed_labels_start_at_zero() {
    let text = Metrics::new().render();
    for line in [
        r#"atrium_closes_total{code="4009"} 0"#,
        r#"atrium_closes_total{code="1013"} 0"#,
        r#"atrium_rejects_total{code="too-large"} 0"#,
        r#"atrium_messages_received_total{type="patch"} 0"#,
        r#"atrium_messages_sent_total{type="presences"} 0"#,
        r#"atrium_room_exits_total{reason="lease-lost"} 0"#,
        r#"atrium_coordinator_operations_total{operation="acquire"} 0"#,
        r#"atrium_http_requests_total{status="5xx"} 0"#,
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from a fresh node"
        );
    }
    let closes = text
        .lines()
        .filter(|l| l.starts_with("atrium_closes_total{"))
        .count();
    assert_eq!(closes, CloseCode::ALL.len());
}
