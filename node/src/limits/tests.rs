use std::time::{Duration, Instant};

use super::*;

mod addresses;

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
fn a_byte_share_lets_one_message_of_any_size_go_then_waits_out_the_debt() {
    let l = KeyedLimiter::bytes(1000, 2000, 10);
    assert_eq!(l.ready(&"a"), Ok(()));
    l.charge(&"a", 1500);
    assert_eq!(l.ready(&"a"), Ok(()), "500 bytes of the burst are left");
    l.charge(&"a", 5000);
    let wait = l.ready(&"a").expect_err("4500 bytes owed");
    assert!(wait > Duration::from_millis(4400) && wait <= Duration::from_millis(4500));
    assert_eq!(l.ready(&"b"), Ok(()), "another key owes nothing");
    l.refund(&"a", 5000);
    assert_eq!(l.ready(&"a"), Ok(()), "what was never sent is given back");
    // Off: a rate of 0 never makes anyone wait.
    let off = KeyedLimiter::bytes(0, 0, 10);
    off.charge(&"a", u64::MAX / 2);
    assert_eq!(off.ready(&"a"), Ok(()));
}

#[test]
fn a_charge_made_before_the_work_is_settled_at_what_it_took() {
    let l = KeyedLimiter::bytes(1000, 1000, 10);
    // Planned 5,000, took 1,500: 500 owed after the burst.
    l.charge(&"a", 5000);
    l.settle(&"a", 5000, 1500);
    let wait = l.ready(&"a").expect_err("500 bytes owed");
    assert!(wait > Duration::from_millis(400) && wait <= Duration::from_millis(500));
    // Planned 100, took 3,000: the rest is taken too.
    l.charge(&"b", 100);
    l.settle(&"b", 100, 3000);
    let wait = l.ready(&"b").expect_err("2,000 bytes owed");
    assert!(wait > Duration::from_millis(1900) && wait <= Duration::from_millis(2000));
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
