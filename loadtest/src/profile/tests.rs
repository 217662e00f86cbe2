use super::render::{count, draw, fold};
use super::*;

/// `perf script` output recorded from a debug atrium-node under a small load (see
/// tests/data/README.md).
fn sample() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-script-node.txt");
    std::fs::read(path).expect("the recorded perf script sample")
}

#[test]
fn a_recorded_perf_script_folds_into_stacks() {
    let folded = fold(&sample()).unwrap();
    let (samples, stacks) = count(&folded);
    assert_eq!(samples, 35, "one per sample");
    assert!(stacks >= 10, "{stacks} stacks");
    // Stacks start at the process (or thread) name and reach into the node's own code.
    assert!(folded.lines().all(|l| !l.starts_with(';')));
    assert!(folded.contains("atrium_node"), "{folded}");
    assert!(folded.contains("tokio"), "{folded}");
}

#[test]
fn folded_stacks_draw_as_an_svg_flame_graph() {
    let folded = fold(&sample()).unwrap();
    let svg = draw(&folded, "atrium-node", "a test").unwrap();
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.starts_with("<?xml"), "{}", &svg[..100]);
    assert!(svg.contains("<svg"));
    assert!(svg.contains("atrium-node"));
    assert!(svg.contains("a test"));
    assert!(svg.contains("tokio"));
    assert!(svg.trim_end().ends_with("</svg>"));
}

#[test]
fn counts_samples_and_stacks() {
    assert_eq!(count("a;b 3\na;c 4\n\n"), (7, 2));
    assert_eq!(count(""), (0, 0));
}

#[test]
fn an_empty_profile_draws_nothing() {
    assert!(draw("", "t", "s").is_err());
    assert_eq!(fold(b"").unwrap(), "");
}

#[test]
fn a_missing_perf_is_named_in_the_error() {
    let err = check(Path::new("/nonexistent/perf"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("--profile needs Linux perf"), "{err}");
    assert!(err.contains("linux-perf"), "{err}");
    let err = check(Path::new("false")).unwrap_err().to_string();
    assert!(err.contains("perf_event_open"), "{err}");
}
