//! The test services' environment, and names no other test uses.

use std::io::Read;

/// A variable `scripts/services.sh` provides; without it the test fails and says why.
pub fn service_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v,
        _ => panic!(
            "{name} is not set. These tests need the test services: run \
             `scripts/services.sh start && source .services/env` from the workspace root, \
             then run the tests again"
        ),
    }
}

/// 32 random hex digits.
pub fn secret() -> String {
    let mut buf = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("read /dev/urandom");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// A loopback port free right now (the kernel's pick).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_differ_and_are_hex() {
        let (a, b) = (secret(), secret());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    #[should_panic(expected = "ATRIUM_TESTKIT_NEVER_SET is not set")]
    fn a_missing_service_fails_by_name() {
        service_env("ATRIUM_TESTKIT_NEVER_SET");
    }
}
