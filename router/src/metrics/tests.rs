use super::*;

#[test]
fn every_family_is_exported_once_touched() {
    let m = Metrics::new();
    m.requests.with_label_values(&["n0"]).inc();
    m.sockets_opened.with_label_values(&["n0"]).inc();
    m.sockets_open.with_label_values(&["n0"]).set(1);
    m.decisions.with_label_values(&["ring"]).inc();
    m.upstream_errors
        .with_label_values(&["n0", "connect"])
        .inc();
    m.refused.with_label_values(&["bad-id"]).inc();
    m.evictions.with_label_values(&["evicted"]).inc();
    m.upgrade_failures.with_label_values(&["connect"]).inc();
    m.latency.observe(0.001);
    let text = String::from_utf8(m.render()).unwrap();
    // Each family by its exact name, as its `# TYPE` line gives it: a name that is a
    // prefix of another (`atrium_router_sockets`) is not found inside the longer one.
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    for name in [
        "atrium_router_requests_total",
        "atrium_router_sockets_opened_total",
        "atrium_router_sockets",
        "atrium_router_routing_decisions_total",
        "atrium_router_upstream_errors_total",
        "atrium_router_refused_total",
        "atrium_router_evictions_total",
        "atrium_router_moved_total",
        "atrium_router_proxy_latency_seconds",
        "atrium_router_upgrade_failures_total",
        "atrium_router_ring_members",
        "atrium_router_live_members",
        "atrium_router_membership_changes_total",
        "atrium_router_lease_holders",
        "atrium_router_lease_events_total",
    ] {
        assert!(families.contains(&name), "{name} missing from {families:?}");
    }
}
