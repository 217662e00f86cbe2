use super::*;
use std::time::Duration;

#[tokio::test]
async fn output_is_kept_and_the_exit_seen() {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "echo ready on 42; echo oops >&2; exit 3"]);
    let mut p = Proc::spawn("sh", cmd);
    assert_eq!(
        p.wait_line("ready on ", Duration::from_secs(10)).await,
        "42"
    );
    let status = p.wait_exit(Duration::from_secs(10)).await.expect("exits");
    assert_eq!(status.code(), Some(3));
    assert!(!p.alive());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(p.log().contains("oops"), "{}", p.log());
}

#[tokio::test]
#[should_panic(expected = "exited")]
async fn a_process_that_exits_before_its_line_fails_the_wait() {
    let mut p = Proc::spawn("true", Command::new("true"));
    p.wait_line("never", Duration::from_secs(10)).await;
}
