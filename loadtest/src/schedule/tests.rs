use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn ticks_follow_the_start_and_phase() {
    let mut s = Schedule::new(ms(1000), 20.0, 0.5).unwrap();
    assert_eq!(s.period(), ms(50));
    assert_eq!(s.due(), ms(1025));
    assert_eq!(s.advance(ms(1025)), 0);
    assert_eq!(s.due(), ms(1075));
    assert_eq!(s.advance(ms(1076)), 0);
    assert_eq!(s.due(), ms(1125));
}

#[test]
fn a_late_wakeup_skips_missed_ticks_and_counts_them() {
    let mut s = Schedule::new(ms(0), 10.0, 0.0).unwrap();
    assert_eq!(s.advance(ms(0)), 0);
    // Due at 100; woke at 350: ticks 100, 200, 300 were due, one send, two skipped.
    assert_eq!(s.advance(ms(350)), 2);
    assert_eq!(s.due(), ms(400));
}

#[test]
fn waking_early_changes_nothing() {
    let mut s = Schedule::new(ms(0), 2.0, 0.0).unwrap();
    s.advance(ms(0));
    assert_eq!(s.advance(ms(10)), 0);
    assert_eq!(s.due(), ms(500));
}

#[test]
fn zero_rate_never_ticks() {
    assert!(Schedule::new(ms(0), 0.0, 0.3).is_none());
    assert!(Schedule::new(ms(0), f64::NAN, 0.3).is_none());
}

#[test]
fn the_schedule_is_fixed_whatever_the_answers() {
    // 2 a second for 30 s on time is 60 sends, from any phase.
    let mut s = Schedule::new(ms(0), 2.0, phase(7, 0.0)).unwrap();
    let mut sends = 0;
    while s.due() < Duration::from_secs(30) {
        let due = s.due();
        s.advance(due);
        sends += 1;
    }
    assert_eq!(sends, 60);
}

#[test]
fn phases_spread_and_stay_in_range() {
    let phases: Vec<f64> = (0..1000).map(|i| phase(i, 0.25)).collect();
    assert!(phases.iter().all(|p| (0.0..1.0).contains(p)));
    let first_tenth = phases.iter().filter(|p| **p < 0.1).count();
    assert!((90..=110).contains(&first_tenth), "{first_tenth}");
}

#[test]
fn connections_ramp_evenly() {
    assert_eq!(connect_at(0, 500.0), ms(0));
    assert_eq!(connect_at(500, 500.0), ms(1000));
    assert_eq!(connect_at(250, 500.0), ms(500));
}

#[test]
fn the_server_caps_the_presence_rate() {
    assert_eq!(presence_rate(20.0, Some(5.0)), 5.0);
    assert_eq!(presence_rate(10.0, Some(20.0)), 10.0);
    assert_eq!(presence_rate(20.0, None), 20.0);
}
