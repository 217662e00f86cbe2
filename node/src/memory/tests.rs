use super::*;

#[test]
fn sizes_read_as_operators_write_them() {
    assert_eq!(parse_size("1073741824"), Ok(1 << 30));
    assert_eq!(parse_size("2GiB"), Ok(2 << 30));
    assert_eq!(parse_size("512M"), Ok(512 << 20));
    assert_eq!(parse_size("1.5g"), Ok(3 << 29));
    assert_eq!(parse_size("auto"), Ok(0));
    assert!(parse_size("lots").is_err());
    assert!(parse_size("5 parsecs").is_err());
}

#[test]
fn reservations_stop_at_the_high_water_mark_and_come_back() {
    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.high_water() - guard.rss();
    let first = guard.reserve(room / 2).expect("half the room fits");
    assert!(guard.reserve(room).is_none(), "more than what is left");
    assert!(guard.admits());
    let second = guard.reserve(room - room / 2).expect("the rest fits");
    assert!(!guard.admits(), "full up to the high-water mark");
    drop((first, second));
    assert!(guard.admits());
    assert!(default_budget() > 64 << 20);
}

#[test]
fn growth_counts_until_two_samples_include_it() {
    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.high_water() - guard.rss();
    // A burst between two samples: each patch is judged with those before it.
    assert!(guard.admit_growth(room / 2));
    assert!(guard.admit_growth(room / 4));
    assert!(
        !guard.admit_growth(room / 2),
        "past the mark with the burst counted"
    );
    let rss = guard.rss();
    guard.sampled(rss);
    assert!(
        !guard.admit_growth(room / 2),
        "still counted one period later"
    );
    guard.sampled(rss);
    assert!(
        guard.admit_growth(room / 2),
        "two periods later it is theirs to show"
    );
}

/// Sockets opening between two samples are each judged with those before them, and count
/// until samples include them.
#[test]
fn sockets_count_as_they_open() {
    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.high_water() - guard.rss();
    let opened = (0..).take_while(|_| guard.admits_socket()).count() as u64;
    assert_eq!(opened, room / SOCKET_BYTES);
    let rss = guard.rss();
    guard.sampled(rss);
    assert!(!guard.admits_socket(), "still counted one period later");
    guard.sampled(rss);
    assert!(
        guard.admits_socket(),
        "two periods later it is theirs to show"
    );
}

#[test]
fn connections_count_as_they_open() {
    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.high_water() - guard.rss();
    let opened = (0..).take_while(|_| guard.admits_connection()).count() as u64;
    assert_eq!(opened, room / CONNECTION_BYTES);
    let rss = guard.rss();
    guard.sampled(rss);
    guard.sampled(rss);
    assert!(
        guard.admits_connection(),
        "two periods later it is theirs to show"
    );
}

/// Text a compressed message became counts once larger than a small patch: a kilobyte on
/// the wire can be many times that.
#[test]
fn inflated_text_counts_past_a_small_patch() {
    use crate::ws::Allowance;
    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.room_left();
    guard.inflated(SMALL_PATCH);
    assert_eq!(guard.room_left(), room, "a small message is not counted");
    guard.inflated(80_000);
    assert_eq!(room - guard.room_left(), 80_000);
}

#[test]
fn reservations_count_growth_admitted_since_the_sample() {
    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.high_water() - guard.rss();
    assert!(guard.admit_growth(room / 2));
    assert!(
        guard.reserve(room).is_none(),
        "a room's load may not count on memory a burst of patches was given"
    );
    assert!(guard.reserve(room / 4).is_some());
}

/// Parsed JSON of small values costs many times its text: the estimate a patch is judged
/// by before it is parsed covers what a parse really takes, counted by an allocator.
#[test]
fn a_parse_is_judged_by_what_it_may_take() {
    let zeros = format!("[{}0]", "0,".repeat(100_000));
    let cost = parse_cost(zeros.as_bytes());
    // What serde_json's values of it hold: 100,001 values of 32 bytes, in a vector grown
    // by doubling (up to twice that), and the text itself.
    let parsed = 2 * 100_001 * std::mem::size_of::<serde_json::Value>() as u64;
    assert!(cost >= parsed, "{cost} < {parsed}");
    let text = format!(r#"{{"text":"{}"}}"#, "x".repeat(200_000));
    assert!(
        parse_cost(text.as_bytes()) < 2 * text.len() as u64,
        "strings cost their text"
    );

    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.high_water() - guard.rss();
    assert!(
        guard.admits_parse("[1,2,3]").is_some(),
        "small patches always"
    );
    let big = format!(
        "[{}0]",
        "0,".repeat((room / 2 / PARSED_BYTES_PER_VALUE) as usize)
    );
    let first = guard.admits_parse(&big).expect("one fits");
    assert!(
        guard.admits_parse(&big).is_none(),
        "two do not, while the first is held"
    );
    assert!(
        guard.admits_parse("[1,2,3]").is_some(),
        "small patches still"
    );
    // A large patch refused after its parse holds nothing once samples can show what its
    // parse left resident: two periods later, however long they take to come.
    drop(first);
    assert!(
        guard.admits_parse(&big).is_none(),
        "held until a sample can include the parse"
    );
    let rss = guard.rss();
    guard.sampled(rss);
    assert!(
        guard.admits_parse(&big).is_none(),
        "one sample is not enough"
    );
    guard.sampled(rss);
    assert!(
        guard.admits_parse(&big).is_some(),
        "given back two periods after it was dropped"
    );
}

/// A welcome's or a load's promise kept "until sampled" lasts two growth periods of resident
/// memory, not a span of time: a late sampler (a loaded CPU) must not see it end before any
/// sample could include the allocation.
#[test]
fn a_held_promise_lasts_two_samples_not_a_time() {
    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.high_water() - guard.rss();
    let promise = guard.reserve(room * 3 / 4).expect("fits");
    promise.hold_until_sampled();
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(
        guard.reserve(room / 2).is_none(),
        "still held with no sample since"
    );
    let rss = guard.rss();
    guard.sampled(rss);
    guard.sampled(rss);
    assert!(
        guard.reserve(room / 2).is_some(),
        "two periods later it is theirs"
    );
}

/// A large frame's bytes count when it is let in and again as they arrive, each until two
/// samples have passed: bytes that trickle in after the first count lapsed are still seen.
#[test]
fn a_frames_bytes_count_as_they_arrive() {
    use crate::ws::Allowance;
    let guard = MemoryGuard::new(crate::stats::rss_bytes() + (64 << 20));
    let room = guard.high_water() - guard.rss();
    let frame = (room / 2) as usize + 1;
    assert!(Allowance::admits(&*guard, frame));
    assert!(!Allowance::admits(&*guard, frame), "two do not fit at once");
    let rss = guard.rss();
    guard.sampled(rss);
    guard.sampled(rss);
    // Samples came and went before its bytes did: they count as they come.
    // Half the frame (rounded up: with the text, at least the whole frame's bytes again).
    Allowance::arrived(&*guard, frame.div_ceil(2));
    assert!(
        !Allowance::admits(&*guard, frame),
        "what arrived counts, with its text"
    );
    guard.sampled(rss);
    guard.sampled(rss);
    assert!(
        Allowance::admits(&*guard, frame),
        "two periods after it came"
    );
}
