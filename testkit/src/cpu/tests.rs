use super::*;

#[test]
fn reads_cpu_from_proc_stat() {
    let stat = "1234 (atrium node) S 1 2 3 4 5 6 7 8 9 10 250 150 0 0 20 0 8 0 100 0 0";
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    assert_eq!(cpu_seconds_from_stat(stat), Some(400.0 / ticks));
    assert!(cpu_seconds_from_stat("garbage").is_none());
    let own = std::fs::read_to_string("/proc/self/stat").unwrap();
    assert!(cpu_seconds_from_stat(&own).is_some());
}

#[test]
fn reads_a_process_cpu_clock() {
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let own = process_cpu_seconds(std::process::id()).unwrap();
    assert!(own > 0.0);
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let coarse = cpu_seconds_from_stat(&stat).unwrap();
    assert!((own - coarse).abs() < 0.5, "{own} vs {coarse}");
    let theirs = process_cpu_seconds(child.id()).unwrap();
    assert!((0.0..1.0).contains(&theirs), "{theirs}");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        process_cpu_seconds(child.id()).is_none(),
        "a reaped child has no clock"
    );
}
