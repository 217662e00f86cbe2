//! Limits by client address: IPv6 by its /64, socket and connection slots,
//! trusted proxies.

use std::net::IpAddr;
use std::sync::Arc;

use super::*;

#[test]
fn ipv6_is_limited_by_its_64() {
    let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
    let b: IpAddr = "2001:db8:1:2:ffff:1:2:3".parse().unwrap();
    let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
    assert_eq!(address_key(a), address_key(b));
    assert_ne!(address_key(a), address_key(c));
    assert_eq!(address_key(a).to_string(), "2001:db8:1:2::");
    let v4: IpAddr = "192.0.2.7".parse().unwrap();
    assert_eq!(address_key(v4), v4);
    assert_ne!(address_key(v4), address_key("192.0.2.8".parse().unwrap()));
    let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
    assert_eq!(address_key(mapped), v4);
    // Sockets per address: two addresses of one /64 share one count.
    let counts = Arc::new(AddressCounts::new(1));
    let _slot = counts.take(a).unwrap();
    assert!(counts.take(b).is_none(), "same /64");
    assert!(counts.take(c).is_some(), "another /64");
    // And so do the keyed limiters, keyed by `address_key`.
    let l = KeyedLimiter::per_minute(1, 10);
    assert!(l.allow(&address_key(a)));
    assert!(!l.allow(&address_key(b)));
}

#[test]
fn connection_slots_are_capped_and_come_back() {
    let cap = ConnectionCap::new(2);
    let a = cap.take().unwrap();
    let b = cap.take().unwrap();
    assert!(cap.take().is_none());
    assert_eq!(cap.open(), 2);
    drop(a);
    let c = cap.take().unwrap();
    drop((b, c));
    assert_eq!(cap.open(), 0);
}

#[test]
fn address_slots_come_back() {
    let counts = Arc::new(AddressCounts::new(1));
    let ip: IpAddr = "10.0.0.1".parse().unwrap();
    let slot = counts.take(ip).unwrap();
    assert!(counts.take(ip).is_none());
    drop(slot);
    assert!(counts.take(ip).is_some());
}

#[test]
fn forwarded_for_only_from_trusted_peers() {
    let proxy: IpAddr = "127.0.0.1".parse().unwrap();
    let trusted = [Network::parse("127.0.0.1").unwrap()];
    let other: IpAddr = "192.0.2.9".parse().unwrap();
    let xff = Some("203.0.113.5, 10.0.0.7");
    assert_eq!(client_address(other, xff, &trusted), other);
    assert_eq!(client_address(proxy, xff, &trusted).to_string(), "10.0.0.7");
    assert_eq!(client_address(proxy, None, &trusted), proxy);
    assert_eq!(client_address(proxy, Some("junk"), &trusted), proxy);
    // A forwarded IPv4-mapped address is the IPv4 client it names (one limit key, not two).
    let mapped = client_address(proxy, Some("::ffff:203.0.113.5"), &trusted);
    assert_eq!(mapped.to_string(), "203.0.113.5");
}

/// Entries with ports count as their addresses; an entry that names no address ends the
/// walk at the nearest trusted hop, so a client cannot hide a forged address behind it.
#[test]
fn forwarded_entries_with_ports_count_and_garbage_ends_the_walk() {
    let pods = Network::parse("10.244.0.0/16").unwrap();
    let router: IpAddr = "10.244.2.2".parse().unwrap();
    let got = |xff: &str| client_address(router, Some(xff), &[pods]).to_string();
    assert_eq!(got("203.0.113.5:4711"), "203.0.113.5");
    assert_eq!(got("[2001:db8::1]:443, 10.244.1.1"), "2001:db8::1");
    assert_eq!(got("[2001:db8::2]"), "2001:db8::2");
    // The client wrote "198.51.100.9" itself; the balancer wrote "unknown".
    assert_eq!(got("198.51.100.9, unknown, 10.244.1.1"), "10.244.1.1");
    assert_eq!(got("198.51.100.9, unknown"), "10.244.2.2");
}

#[test]
fn networks_cover_their_ranges() {
    let pods = Network::parse("10.244.0.0/16").unwrap();
    assert!(pods.contains(&"10.244.3.7".parse().unwrap()));
    assert!(!pods.contains(&"10.245.0.1".parse().unwrap()));
    assert!(!pods.contains(&"::1".parse().unwrap()));
    let any = Network::parse("0.0.0.0/0").unwrap();
    assert!(any.contains(&"192.0.2.1".parse().unwrap()));
    let v6 = Network::parse("fd00::/8").unwrap();
    assert!(v6.contains(&"fd12::1".parse().unwrap()));
    assert!(Network::parse("10.0.0.0/33").is_none());
    assert!(Network::parse("nonsense").is_none());
    // A chain of routers inside the range is skipped to reach the client.
    let xff = Some("203.0.113.5, 10.244.1.1");
    let got = client_address("10.244.2.2".parse().unwrap(), xff, &[pods]);
    assert_eq!(got.to_string(), "203.0.113.5");
}
