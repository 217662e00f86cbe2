use super::url::take_ssl_params;
use super::*;
use tokio_postgres::config::SslMode as Pg;

fn mode(url: &str) -> (SslMode, Pg) {
    let c = parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    (c.mode, c.config.get_ssl_mode())
}

#[test]
fn modes_map_to_what_tokio_postgres_knows() {
    let base = "postgres://u:p@db:5432/atrium";
    assert_eq!(mode(base), (SslMode::Prefer, Pg::Prefer));
    assert_eq!(
        mode(&format!("{base}?sslmode=disable")),
        (SslMode::Disable, Pg::Disable)
    );
    assert_eq!(
        mode(&format!("{base}?sslmode=prefer")),
        (SslMode::Prefer, Pg::Prefer)
    );
    assert_eq!(
        mode(&format!("{base}?sslmode=require")),
        (SslMode::Require, Pg::Require)
    );
    // A system root store may be empty on a build machine: verify modes are checked
    // with a root file in the tests of tests/postgres_tls.rs.
}

#[test]
fn other_parameters_survive_and_ssl_ones_are_taken_out() {
    let (rest, mode, root) = take_ssl_params(
        "postgresql://u@h/db?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&options=-c%20a%3Db",
    )
    .unwrap();
    assert_eq!(
        rest,
        "postgresql://u@h/db?application_name=x&options=-c%20a%3Db"
    );
    assert_eq!(mode.as_deref(), Some("verify-full"));
    assert_eq!(root.as_deref(), Some("/etc/ca.pem"));
    let (rest, mode, root) = take_ssl_params("postgres://u@h/db?sslmode=require").unwrap();
    assert_eq!(
        (rest.as_str(), mode.as_deref(), root),
        ("postgres://u@h/db", Some("require"), None)
    );
    let kv = "host=h user=u sslmode=require";
    assert_eq!(take_ssl_params(kv).unwrap(), (kv.to_owned(), None, None));
    assert_eq!(mode_of_kv(kv), SslMode::Require);
}

fn mode_of_kv(s: &str) -> SslMode {
    parse(s).unwrap().mode
}

#[test]
fn bad_settings_are_named() {
    let e = parse("postgres://u@h/db?sslmode=allow").err().unwrap();
    assert!(e.contains("sslmode=\"allow\" is not supported"), "{e}");
    let e = parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
        .err()
        .unwrap();
    assert!(e.contains("sslrootcert=/nonexistent/ca.pem"), "{e}");
    let e = parse("postgres://u@h/db?sslrootcert=%zz").err().unwrap();
    assert!(e.contains("%-escape"), "{e}");
    let e = parse("host=h sslmode=verify-full").err().unwrap();
    assert!(e.contains("URL form"), "{e}");
}
