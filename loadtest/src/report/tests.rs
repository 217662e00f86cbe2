use super::*;

#[test]
fn cpu_per_message() {
    assert_eq!(cpu_us_per(3.0, 100_000), Some(30.0));
    assert_eq!(cpu_us_per(3.0, 0), None);
}

#[test]
fn a_generator_near_its_cores_or_late_was_the_limit() {
    assert_eq!(limited(Some(0.5), 1.0, 2.0), None);
    assert_eq!(limited(Some(0.9), 1.0, 2.0), None);
    assert_eq!(limited(None, 1.0, 2.0), None);
    let cpu = limited(Some(0.95), 1.0, 2.0).unwrap();
    assert!(
        cpu.contains("0.95 of the 1 cores") && cpu.contains("90%"),
        "{cpu}"
    );
    // Two usable cores: one busy core is not the limit.
    assert_eq!(limited(Some(0.95), 2.0, 2.0), None);
    assert!(limited(Some(1.9), 2.0, 2.0).is_some());
    let late = limited(Some(0.2), 1.0, 25.0).unwrap();
    assert!(late.contains("25.0 ms"), "{late}");
    assert_eq!(limited(Some(0.2), 1.0, 20.0), None);
}

#[test]
fn memory_per_connection() {
    assert_eq!(kb_per_connection(100 << 20, 250 << 20, 1000), Some(153.6));
    assert_eq!(kb_per_connection(100, 50, 10), Some(0.0));
    assert_eq!(kb_per_connection(1, 2, 0), None);
    assert_eq!(mb(3 << 20), 3.0);
}

#[test]
fn busy_generator_is_flagged() {
    assert!(busy(2.0, 0, 1000).is_none());
    assert!(busy(25.0, 0, 1000).unwrap().contains("25.0 ms"));
    assert!(busy(2.0, 50, 950).unwrap().contains("skipped 50 of 1000"));
    assert!(busy(2.0, 5, 995).is_none());
}

#[test]
fn the_json_keeps_the_names_other_tools_read() {
    let r = Report {
        drop: Some(DropResult::default()),
        ..Default::default()
    };
    let v = serde_json::to_value(&r).unwrap();
    // Each section of the JSON, with the names other tools read in it ("" for the top).
    let sections: [(&str, &[&str]); 7] = [
        (
            "",
            &[
                "label",
                "users",
                "files",
                "editors",
                "duration_s",
                "patch_relay_ms",
                "patch_ack_ms",
                "presence_ms",
                "rates",
                "problems",
                "server",
                "generator",
                "drop",
            ],
        ),
        ("patch_relay_ms", &["p50", "p90", "p99", "max", "count"]),
        (
            "rates",
            &[
                "patches_sent_per_s",
                "patches_received_per_s",
                "presence_sent_per_s",
                "presence_received_per_s",
                "messages_received_per_s",
                "mb_received_per_s",
            ],
        ),
        (
            "problems",
            &[
                "dropped_patches",
                "unexpected_closes",
                "connection_errors",
                "handshake_resets",
                "rate_limited",
                "rejected",
                "joined_as_viewer",
            ],
        ),
        (
            "server",
            &[
                "cpu_cores",
                "cpu_us_per_message",
                "cpu_us_per_delivered_update",
                "delivered_updates_per_second",
                "pinned_to",
                "cpus_allowed",
                "max_rss_mb",
                "sched_delay_p99_ms",
            ],
        ),
        (
            "generator",
            &[
                "sched_delay_max_ms",
                "busy_warning",
                "cpu_us_per_delivered_update",
                "delivered_updates_per_second",
                "generator_limited",
                "pinned_to",
                "cpus_allowed",
            ],
        ),
        ("drop", &["server_up", "health_after_ms"]),
    ];
    for (section, keys) in sections {
        let at = if section.is_empty() { &v } else { &v[section] };
        for key in keys {
            assert!(at.get(key).is_some(), "{section} {key}");
        }
    }
    assert!(r.text().contains("patch relay"));
}

#[test]
fn the_text_warns_when_the_generator_was_the_limit() {
    let mut r = Report::default();
    assert!(!r.text().contains("WARNING"));
    r.generator.generator_limited_reason = limited(Some(0.97), 1.0, 3.0);
    r.generator.generator_limited = true;
    r.generator.pinned_to = Some("0".into());
    r.generator.cpus_allowed = Some("0".into());
    let text = r.text();
    assert!(
        text.contains("WARNING: the generator, not the server, was the limit: it used 0.97"),
        "{text}"
    );
    assert!(text.contains("pinned to CPUs 0 (allowed: 0)"), "{text}");
}
