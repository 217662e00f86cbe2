use super::cpu::machine_cpu_from_stat;
use super::latency::histogram;
#[test]
fn machine_cpu_counts_everything_but_idle_and_iowait() {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let (busy, total) =
        machine_cpu_from_stat("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5\n").unwrap();
    assert_eq!((busy * ticks, total * ticks), (150.0, 1000.0));
    assert!(machine_cpu_seconds().is_some());
}

use super::*;

#[test]
fn summaries_are_in_milliseconds() {
    let mut h = histogram();
    for us in 1..=1000u64 {
        h.record(us * 1000).unwrap(); // 1 ms .. 1000 ms
    }
    let s = Summary::of(&h);
    assert_eq!(s.count, 1000);
    assert!((s.p50 - 500.0).abs() < 1.0, "{s:?}");
    assert!((s.p90 - 900.0).abs() < 1.0, "{s:?}");
    assert!((s.p99 - 990.0).abs() < 1.0, "{s:?}");
    assert!((s.max - 1000.0).abs() < 1.0, "{s:?}");
    assert!((s.mean - 500.5).abs() < 1.0, "{s:?}");
}

#[test]
fn an_empty_histogram_is_all_zero() {
    assert_eq!(Summary::of(&histogram()), Summary::default());
}

#[test]
fn only_the_window_counts_but_every_second_is_seen() {
    let m = Measures::new();
    m.record_us(&m.ack, 5_000);
    assert_eq!(Measures::total(&m.ack).count, 0);
    m.set_measuring(true);
    m.record_us(&m.ack, 7_000);
    m.record_us(&m.ack, 120_000_000); // beyond the bounds: kept at the top
    assert_eq!(Measures::total(&m.ack).count, 2);
    assert_eq!(Measures::take_second(&m.ack).count, 3);
    assert_eq!(Measures::take_second(&m.ack).count, 0);
}

#[test]
fn rates_come_from_counter_changes() {
    let a = Snapshot {
        patches_sent: 100,
        messages_received: 1000,
        ..Default::default()
    };
    let b = Snapshot {
        patches_sent: 300,
        messages_received: 4000,
        ..Default::default()
    };
    let r = a.rates(&b, 2.0);
    assert_eq!(r[0], 100.0);
    assert_eq!(r[6], 1500.0);
    assert_eq!(a.rates(&b, 0.0)[0], 0.0);
}
