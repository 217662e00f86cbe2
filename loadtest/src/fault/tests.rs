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

#[test]
fn a_file_is_served_when_every_router_that_is_up_serves_it() {
    use availability::Answer::{Down, Failed, Served};
    // Two routers, one file, three rounds: the second router down, then failing.
    let probed: Probed = vec![
        vec![vec![(0.0, Served), (100.0, Served), (200.0, Served)]],
        vec![vec![(5.0, Down), (105.0, Failed), (205.0, Served)]],
    ];
    assert_eq!(
        through_all(&probed),
        vec![vec![(5.0, true), (105.0, false), (205.0, true)]]
    );
    // Through the second alone, down is not served.
    assert_eq!(
        through(&probed, 1, None),
        vec![vec![(5.0, false), (105.0, false), (205.0, true)]]
    );
    // Every router down: nothing serves the file.
    let probed: Probed = vec![vec![vec![(0.0, Down)]], vec![vec![(1.0, Down)]]];
    assert_eq!(through_all(&probed), vec![vec![(1.0, false)]]);
}

#[test]
fn the_stale_router_figure_counts_from_the_kill_over_the_dead_nodes_files() {
    use availability::Answer::{Failed, Served};
    let row = |answers: &[(f64, availability::Answer)]| answers.to_vec();
    // File 0 was the dead node's; file 1 another node's. The kill came 50 ms into probing.
    let probed: Probed = vec![
        vec![
            row(&[
                (0.0, Served),
                (100.0, Failed),
                (200.0, Served),
                (300.0, Served),
            ]),
            row(&[
                (0.0, Served),
                (100.0, Served),
                (200.0, Served),
                (300.0, Served),
            ]),
        ],
        vec![
            row(&[
                (0.0, Served),
                (100.0, Failed),
                (200.0, Failed),
                (300.0, Served),
            ]),
            row(&[
                (0.0, Served),
                (100.0, Failed),
                (200.0, Failed),
                (300.0, Failed),
            ]),
        ],
    ];
    let injection = Injection {
        stale_router: Some(1),
        dead_files: vec![0],
        ..Default::default()
    };
    let names = vec!["router".to_string(), "router-1".to_string()];
    let s = stale_figures(&probed, &names, &injection, 50.0).unwrap();
    assert_eq!(s.stale_router, "router-1");
    assert_eq!(s.dead_node_files, 1);
    assert_eq!(s.stale_router_ms, Some(250.0));
    assert_eq!(s.healthy_router_ms, Some(150.0));
    // Per router, over every file: the second never served file 1 again.
    let by = by_router(&probed, &names, 0.0);
    assert_eq!(by[0].recover_ms, Some(200.0));
    assert_eq!(by[1].recover_ms, None);
    assert!(by_router(&probed, &names[..1], 0.0).is_empty());
}

#[test]
fn probing_settles_once_every_last_answer_is_a_200() {
    use availability::Answer::{Down, Failed, Served};
    let mut probed: Probed = vec![
        vec![vec![(0.0, Failed), (100.0, Served)], vec![(0.0, Served)]],
        vec![vec![(5.0, Served)], vec![(5.0, Served), (105.0, Failed)]],
    ];
    // The second router's last answer for the second file failed: not settled.
    assert!(!availability::settled(&probed));
    probed[1][1].push((205.0, Down));
    assert!(!availability::settled(&probed));
    probed[1][1].push((305.0, Served));
    assert!(availability::settled(&probed));
    // A file never asked is not settled either.
    probed[0].push(Vec::new());
    assert!(!availability::settled(&probed));
}
