use super::*;

#[test]
fn defaults_are_valid() {
    let config = RouterConfig::parse_from(["atrium-router"]);
    config.validate().unwrap();
    assert_eq!(config.fleet.lease(), atrium_coordinator::DEFAULT_LEASE);
    assert!(config.stop.shutdown() >= config.stop.drain());
}

#[test]
fn shutdown_must_cover_the_drain() {
    let config =
        RouterConfig::parse_from(["atrium-router", "--drain-ms", "10", "--shutdown-ms", "5"]);
    assert!(config.validate().is_err());
}
