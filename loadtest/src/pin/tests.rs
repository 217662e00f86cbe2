use super::*;

#[test]
fn cpu_lists_read_as_taskset_writes_them() {
    let list = |t: &str| CpuList::parse("--pin-server", t).unwrap();
    assert_eq!(list("1").0, &[1]);
    assert_eq!(list("0-1").0, &[0, 1]);
    assert_eq!(list("3,0-1, 5").0, &[0, 1, 3, 5]);
    assert_eq!(list("2,2,1-2").0, &[1, 2]);
    assert_eq!(list("0-2,4,6-7").to_string(), "0-2,4,6-7");
    assert_eq!(list("1").to_string(), "1");
}

#[test]
fn a_bad_cpu_list_says_what_is_wrong() {
    for (text, why) in [
        ("", "not a CPU"),
        ("a", "not a CPU"),
        ("1-", "not a CPU"),
        ("-1", "not a CPU"),
        ("0,,1", "not a CPU"),
        ("3-1", "runs backwards"),
        ("1024", "numbered below 1024"),
    ] {
        let e = CpuList::parse("--pin-generator", text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--pin-generator") && e.contains(why),
            "{text:?}: {e}"
        );
    }
}

#[test]
fn a_cpu_the_tool_may_not_use_is_refused() {
    let list = |t: &str| CpuList::parse("--pin-server", t).unwrap();
    assert!(list("1").within("--pin-server", &list("0-1")).is_ok());
    let e = list("0,2")
        .within("--pin-server", &list("0-1"))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "--pin-server 0,2: CPU 2 is not one this tool may run on (it may use 0-1)"
    );
}

#[test]
fn the_allowed_cpus_are_read_from_proc_status() {
    let status = "Name:\tatrium-node\nCpus_allowed:\t2\nCpus_allowed_list:\t1\nMems_allowed:\t1\n";
    assert_eq!(allowed_from_status(status).as_deref(), Some("1"));
    assert_eq!(allowed_from_status("Name:\tx\n"), None);
    // This process's own, as the kernel has it.
    let mine = allowed_for(std::process::id()).unwrap();
    assert_eq!(mine, affinity(0).unwrap().to_string());
}

#[test]
fn a_spawned_process_runs_where_it_is_placed() {
    let Some(started) = started_on() else { return };
    let cpu = CpuList(vec![*started.0.last().unwrap()]);
    let mut cmd = Command::new("sleep");
    cmd.arg("5");
    place(&mut cmd, Some(&cpu));
    let mut child = cmd.spawn().unwrap();
    let seen = allowed_for(child.id());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(seen, Some(cpu.to_string()));
}
