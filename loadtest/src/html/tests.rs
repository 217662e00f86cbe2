use super::blocks::measured_window;
use super::chart::nice_step;
use super::*;
use crate::report::{MemoryPoint, Second};

fn second(t: f64, phase: &str, p99: f64) -> Second {
    Second {
        t_s: t,
        phase: phase.into(),
        open: 10,
        patches_sent: 8.0,
        patches_received: 72.0,
        relay_p50_ms: p99 / 2.0,
        relay_p99_ms: p99,
        server_cpu_percent: Some(12.5),
        ..Default::default()
    }
}

fn report() -> Report {
    Report {
        label: "a <b>label</b> & more".into(),
        target: "spawned node at http://127.0.0.1:1".into(),
        seconds: vec![
            second(1.0, "warmup", 3.0),
            second(2.0, "measure", 4.0),
            second(3.0, "measure", 0.0),
            second(4.0, "close", 5.0),
        ],
        memory: vec![
            MemoryPoint {
                t_s: 1.0,
                rss_mb: Some(150.0),
                connections: Some(10),
            },
            MemoryPoint {
                t_s: 2.0,
                rss_mb: None,
                connections: None,
            },
        ],
        ..Default::default()
    }
}

#[test]
fn the_page_is_self_contained() {
    let html = page(&report());
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.trim_end().ends_with("</html>"));
    for outside in ["<script", "src=", "<link", "@import", "url(", "@font-face"] {
        assert!(!html.contains(outside), "{outside}");
    }
    // Seven line plots and the bar chart, all inline.
    assert_eq!(html.matches("<svg").count(), 8);
    assert_eq!(html.matches("</svg>").count(), 8);
    assert!(html.contains("<polyline"));
    for title in [
        "Latency p99",
        "Latency p50",
        "Patches a second",
        "Presence a second",
        "CPU, % of one core",
        "Server memory",
        "Connections",
        "Latency percentiles over the measured window",
    ] {
        assert!(html.contains(title), "{title}");
    }
    assert!(html.contains("patch relay"));
}

#[test]
fn text_from_the_run_is_escaped() {
    let html = page(&report());
    assert!(!html.contains("<b>label"));
    assert!(html.contains("a &lt;b&gt;label&lt;/b&gt; &amp; more"));
}

#[test]
fn the_measured_window_is_shaded() {
    let r = report();
    assert_eq!(measured_window(&r.seconds), Some((1.0, 3.0)));
    assert!(page(&r).contains("class=\"band\""));
    assert_eq!(measured_window(&[]), None);
}

#[test]
fn missing_values_break_the_line() {
    let series = [Series {
        name: "x",
        color: BLUE,
        points: vec![
            (0.0, Some(1.0)),
            (1.0, Some(2.0)),
            (2.0, None),
            (3.0, Some(4.0)),
        ],
    }];
    let svg = line_chart("t", "u", &series, None);
    assert_eq!(svg.matches("<polyline").count(), 2);
    assert_eq!(svg.matches("<circle").count(), 3);
    let empty = line_chart("t", "u", &[], None);
    assert!(empty.contains("no data"));
}

#[test]
fn steps_are_round() {
    assert_eq!(nice_step(100.0, 4.0), 50.0);
    assert_eq!(nice_step(7.0, 4.0), 2.0);
    assert_eq!(nice_step(0.3, 4.0), 0.1);
    assert_eq!(nice_step(0.0, 4.0), 1.0);
    assert_eq!(num(1234.5), "1234");
    assert_eq!(num(12.345), "12.3");
    assert_eq!(num(1.2345), "1.23");
    assert_eq!(tick(40.0, 20.0), "40");
    assert_eq!(tick(0.3, 0.1), "0.3");
    assert_eq!(tick(0.25, 0.05), "0.25");
}
