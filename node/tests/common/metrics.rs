//! A node's `/metrics`, read and waited on.

use super::*;

/// Like [`http`], to any port of 127.0.0.1 (an admin address, say).
pub use atrium_testkit::http::request as http_at;

/// The node's `/metrics` text (asserting a 200), from its admin address.
pub async fn metrics_text(node: &Node) -> String {
    let port = node
        .admin_port()
        .expect("the node has no admin address (ATRIUM_ADMIN_BIND was turned off)");
    let r = http_at(port, "GET", "/metrics", &[], None).await;
    r.assert_status(200);
    r.text
}

/// The sum of every series of metric `name` whose labels include all of
/// `labels`; None when no such series is in `text`.
pub fn metric_sum(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let Some((series, value)) = line.trim().rsplit_once(' ') else {
            continue;
        };
        let (series_name, series_labels) = match series.find('{') {
            Some(i) => (&series[..i], &series[i..]),
            None => (series, ""),
        };
        if series_name != name {
            continue;
        }
        if !labels
            .iter()
            .all(|(k, v)| series_labels.contains(&format!("{k}=\"{v}\"")))
        {
            continue;
        }
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("metric line with a bad value: {line}"));
        found = Some(found.unwrap_or(0.0) + v);
    }
    found
}

/// The sum of the series of `name` with `labels`, which must be exported: every family
/// the node has is exported from the start (fixed labels at 0), so a missing one means a
/// renamed metric, and a check against 0 must not pass on it.
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metric_sum(text, name, labels)
        .unwrap_or_else(|| panic!("{name}{labels:?} is not exported by the node"))
}

/// Whether `text` has a series named `name` (with or without labels).
pub fn has_metric(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        !l.starts_with('#')
            && l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
    })
}

/// Polls `/metrics` until `want` holds for the sum of the matching series
/// (which must be exported); returns the last value. Panics after `dur`.
pub async fn wait_metric(
    node: &Node,
    name: &str,
    labels: &[(&str, &str)],
    want: impl Fn(f64) -> bool,
    dur: Duration,
) -> f64 {
    let deadline = Instant::now() + dur;
    loop {
        let v = metric(&metrics_text(node).await, name, labels);
        if want(v) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{name}{labels:?} stayed at {v} for {dur:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Prints a measured figure as one `FIGURE {json}` line, for the docs' tables.
pub fn figure(value: Value) {
    eprintln!("FIGURE {value}");
}
