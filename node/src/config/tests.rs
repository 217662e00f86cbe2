use std::time::Duration;

use clap::Parser;

use super::derived::open_file_limit;
use super::*;

#[test]
fn defaults_are_the_documented_ones() {
    let c = NodeConfig::parse_from(["atrium-node"]);
    assert_eq!(c.bind.to_string(), "127.0.0.1:8080");
    assert_eq!(c.room_ops, 1000);
    assert_eq!(c.room_ops_bytes, 8 * 1024 * 1024);
    assert_eq!(c.room_idle_ms, 600_000);
    assert_eq!(c.max_message_bytes, 1024 * 1024);
    // The comma lists are empty when unset: no trusted proxy, no admin.
    assert_eq!(c.trusted_proxies(), Ok(Vec::new()));
    assert!(!c.is_admin(""));
    // The hello deadline must end well before a room could go idle under it.
    assert!(c.hello_timeout() < c.room_idle());
    // A socket must miss at least two pings before it is given up, and be
    // given up within a minute.
    assert!(c.ping_timeout() > c.ping_interval() * 2);
    assert!(c.ping_timeout() + c.ping_interval() / 4 <= Duration::from_secs(60));
}

#[test]
fn every_setting_is_documented() {
    let source = include_str!("../config.rs");
    let docs = include_str!("../../../docs/operations.md");
    let names: Vec<&str> = source
        .split("env = \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(names.len() >= 20, "found only {names:?}");
    for name in names {
        assert!(
            docs.contains(&format!("`{name}`")),
            "{name} is missing from docs/operations.md"
        );
    }
}

#[test]
fn switches_take_the_usual_spellings() {
    for (v, want) in [
        ("1", true),
        ("yes", true),
        ("true", true),
        ("0", false),
        ("off", false),
    ] {
        let c = NodeConfig::parse_from(["atrium-node", "--health-stats", v]);
        assert_eq!(c.health_stats, want, "{v}");
    }
}

#[test]
fn origins_are_allowed_by_list_or_by_default() {
    let open = NodeConfig::parse_from(["atrium-node"]);
    assert!(open.origin_allowed("https://evil.example"));
    let c = NodeConfig::parse_from([
        "atrium-node",
        "--allowed-origins",
        "https://app.example.com/, http://localhost:3000",
    ]);
    assert!(c.origin_allowed("https://app.example.com"));
    assert!(c.origin_allowed("HTTPS://APP.EXAMPLE.COM"));
    assert!(c.origin_allowed("http://localhost:3000"));
    assert!(!c.origin_allowed("https://app.example.com.evil.example"));
    assert!(!c.origin_allowed("null"));
    let budget = NodeConfig::parse_from(["atrium-node", "--memory-budget", "512M"]);
    assert_eq!(budget.memory_budget(), 512 << 20);
    assert!(open.memory_budget() > 0);
}

#[test]
fn connections_default_to_the_open_file_limit_less_a_reserve() {
    let proc = "Limit                     Soft Limit           Hard Limit           Units\n\
                Max open files            1024                 524288               files\n";
    assert_eq!(open_file_limit(proc), Some(1024));
    assert_eq!(
        open_file_limit("Max open files unlimited unlimited files"),
        Some(1 << 20)
    );
    assert_eq!(open_file_limit("nothing"), None);
    let c = NodeConfig::parse_from(["atrium-node"]);
    assert!(c.max_connections() >= 64);
    let set = NodeConfig::parse_from(["atrium-node", "--max-connections", "7"]);
    assert_eq!(set.max_connections(), 7);
    assert_eq!(c.body_timeout(), Duration::from_secs(10));
    assert_eq!(
        c.connections_per_ip(),
        Some(164),
        "sockets per address and 64"
    );
    let off = NodeConfig::parse_from(["atrium-node", "--connections-per-ip", "0"]);
    assert_eq!(off.connections_per_ip(), None);
    assert_eq!(c.write_timeout(), Duration::from_secs(30));
}

#[test]
fn admins_are_matched_case_insensitively() {
    let c = NodeConfig::parse_from(["atrium-node", "--admins", "Ops@Example.com, b@x.io"]);
    assert!(c.is_admin("ops@example.com"));
    assert!(c.is_admin("b@x.io"));
    assert!(!c.is_admin("c@x.io"));
}

#[test]
fn the_large_message_allowance_is_a_quarter_of_the_budget_but_fits_the_largest_document() {
    let mib = |n: usize| n << 20;
    let big = NodeConfig::parse_from(["atrium-node", "--memory-budget", "4G"]);
    assert_eq!(
        big.welcome_budget(),
        mib(256),
        "the setting, under a quarter of 4 GiB"
    );
    let small = NodeConfig::parse_from([
        "atrium-node",
        "--memory-budget",
        "256M",
        "--max-doc-bytes",
        "8388608",
    ]);
    assert_eq!(small.welcome_budget(), mib(64), "a quarter of 256 MiB");
    let tight = NodeConfig::parse_from(["atrium-node", "--memory-budget", "256M"]);
    assert_eq!(
        tight.welcome_budget(),
        mib(65),
        "a 64 MiB document's welcome still fits"
    );
}

#[test]
fn password_hashing_takes_at_most_half_the_cores_by_default() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let c = NodeConfig::parse_from(["atrium-node"]);
    assert_eq!(c.hash_concurrency(), (cores / 2).max(1));
    assert!(c.hash_concurrency() * 2 <= cores.max(2));
    let set = NodeConfig::parse_from(["atrium-node", "--hash-concurrency", "6"]);
    assert_eq!(set.hash_concurrency(), 6);
    let zero = NodeConfig::parse_from(["atrium-node", "--hash-concurrency", "0"]);
    assert_eq!(zero.hash_concurrency(), 1, "at least one hash at a time");
}
