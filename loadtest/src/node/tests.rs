use super::*;

#[test]
fn reads_the_listening_line() {
    assert_eq!(
        listening_url("atrium-node local listening on http://127.0.0.1:4321").as_deref(),
        Some("http://127.0.0.1:4321")
    );
    assert_eq!(listening_url("something else"), None);
}

#[test]
fn reads_memory_from_proc_status() {
    let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
    assert_eq!(rss_from_status(status), (Some(1 << 20), Some(2 << 20)));
}
