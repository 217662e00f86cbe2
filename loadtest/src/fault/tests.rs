use super::*;

#[test]
fn outages_and_recovery_are_read_from_the_answers() {
    let seen = vec![
        vec![(0.0, false), (100.0, false), (200.0, true), (300.0, true)],
        vec![
            (0.0, true),
            (100.0, true),
            (200.0, false),
            (300.0, false),
            (450.0, true),
        ],
        vec![(0.0, true), (100.0, true), (200.0, true), (300.0, true)],
    ];
    let a = availability(&seen, 250.0);
    assert_eq!(a.longest_outage_ms, 250.0);
    assert_eq!(a.files_interrupted, 2);
    // Every file answered after 250 ms: the last of them at 450 ms.
    assert_eq!(a.recover_ms, Some(450.0));
}

#[test]
fn a_file_never_back_has_no_recovery_and_counts_to_the_end() {
    let seen = vec![
        vec![(0.0, true), (100.0, false), (900.0, false)],
        vec![(0.0, true), (100.0, true)],
    ];
    let a = availability(&seen, 0.0);
    assert_eq!(a.recover_ms, None);
    assert_eq!(a.longest_outage_ms, 800.0);
}
