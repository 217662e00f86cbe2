use super::*;

#[test]
fn bucket_refills_at_its_rate() {
    let t0 = Instant::now();
    let mut b = Bucket::new(10.0, 2.0, t0);
    assert!(b.take(t0));
    assert!(b.take(t0));
    assert!(!b.take(t0));
    assert!(b.wait(t0) > Duration::from_millis(90));
    assert!(b.take(t0 + Duration::from_millis(101)));
}

#[test]
fn a_charged_bucket_waits_out_its_debt() {
    let t0 = Instant::now();
    let mut b = Bucket::new(1000.0, 1000.0, t0);
    assert_eq!(b.debt(t0), Duration::ZERO);
    b.charge(t0, 3000.0);
    let d = b.debt(t0);
    assert!(
        d > Duration::from_millis(1990) && d <= Duration::from_millis(2000),
        "{d:?}"
    );
    assert_eq!(b.debt(t0 + Duration::from_secs(2)), Duration::ZERO);
}

#[test]
fn keyed_limiter_stays_bounded() {
    let l = KeyedLimiter::per_minute(2, 3);
    assert!(l.allow(&"a"));
    assert!(l.allow(&"a"));
    assert!(!l.allow(&"a"));
    assert!(l.allow(&"b"));
    assert!(l.allow(&"c"));
    // Three active keys: a fourth is let in, and the least recently used
    // ("a") is forgotten to make room; memory stays at three keys.
    assert!(l.allow(&"d"));
    assert_eq!(l.len(), 3);
    assert!(l.allow(&"a"), "a was forgotten, so it starts afresh");
    assert_eq!(l.len(), 3);
}

#[test]
fn a_full_table_never_refuses_a_newcomer() {
    // The review's case: the table full of keys that are all still active.
    let l = KeyedLimiter::per_minute(1, 100);
    for i in 0..100 {
        assert!(l.allow(&i));
    }
    for i in 100..10_000 {
        assert!(l.allow(&i), "newcomer {i} refused");
        assert!(l.len() <= 100);
    }
    // A recently used key survives the churn of others better than an old one.
    let l = KeyedLimiter::per_minute(1, 3);
    assert!(l.allow(&"busy"));
    assert!(l.allow(&"x"));
    assert!(!l.allow(&"busy"), "busy is out of tokens");
    assert!(l.allow(&"y"));
    assert!(l.allow(&"z"), "x, the oldest, makes room");
    assert!(!l.allow(&"busy"), "busy is remembered, still empty");
}

#[test]
fn keyed_limiter_says_when_to_come_back() {
    let t0 = Instant::now();
    let l = KeyedLimiter::with_burst(30, 2, 10);
    assert!(l.check_at(&"k", t0).is_ok());
    assert!(l.check_at(&"k", t0).is_ok());
    let wait = l.check_at(&"k", t0).unwrap_err();
    // 30 a minute: one every 2 s.
    assert!(wait > Duration::from_millis(1900) && wait <= Duration::from_secs(2));
    assert!(l.check_at(&"k", t0 + Duration::from_secs(2)).is_ok());
}

#[test]
fn reservations_queue_up_in_order_and_refuse_past_the_longest_wait() {
    let t0 = Instant::now();
    // 60 a minute (one a second), two at once.
    let l = KeyedLimiter::with_burst(60, 2, 10);
    let max = Duration::from_millis(2500);
    assert_eq!(l.reserve_at(&"k", t0, max), Ok(Duration::ZERO));
    assert_eq!(l.reserve_at(&"k", t0, max), Ok(Duration::ZERO));
    // The next ones wait their turn: 1 s, then 2 s.
    let near = |d: Duration, secs: f64| (d.as_secs_f64() - secs).abs() < 0.01;
    assert!(near(l.reserve_at(&"k", t0, max).unwrap(), 1.0));
    assert!(near(l.reserve_at(&"k", t0, max).unwrap(), 2.0));
    // A turn 3 s away is past the longest wait: refused, and not taken.
    assert!(near(l.reserve_at(&"k", t0, max).unwrap_err(), 3.0));
    assert!(near(l.reserve_at(&"k", t0, max).unwrap_err(), 3.0));
    // Time pays the queue off.
    let later = t0 + Duration::from_secs(3);
    assert!(near(l.reserve_at(&"k", later, max).unwrap(), 0.0));
    // Another key has its own bucket.
    assert_eq!(l.reserve_at(&"other", t0, max), Ok(Duration::ZERO));
}

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
