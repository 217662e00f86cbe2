//! The Postgres store over TLS, against a Postgres of the test's own: `initdb` in a temporary
//! folder, `ssl = on` with a certificate from a CA made here (rcgen), `hostssl`-only
//! `pg_hba.conf`, a free loopback port. Each `sslmode` of `ATRIUM_DATABASE_URL` is checked
//! against it: encrypted sessions, certificate and host-name checks, and a clear error when
//! a check fails or the server refuses plain connections. Needs Postgres's binaries
//! (`initdb`, `pg_ctl`), as `scripts/services.sh` installs them; nothing else.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use atrium_node::store::postgres::PgStore;
use rcgen::{BasicConstraints, Certificate, CertificateParams, DnType, IsCa, KeyPair};

/// The folder holding `initdb` and `pg_ctl`: the newest under /usr/lib/postgresql, else PATH.
fn postgres_bin() -> PathBuf {
    atrium_testkit::postgres::server_binaries().expect(
        "no Postgres binaries (initdb, pg_ctl): run `scripts/services.sh start`, which \
             installs them",
    )
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a Postgres tool, as the `postgres` user when we are root (Postgres refuses root).
fn pg_tool(bin: &Path, tool: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(tool));
        c
    } else {
        Command::new(bin.join(tool))
    };
    cmd.args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"))
}

/// A CA and its key.
struct Ca {
    cert: Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("CA certificate");
    Ca { cert, key }
}

/// A throwaway Postgres with TLS on and only `hostssl` lines in `pg_hba.conf`.
struct TlsPostgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// PEM of the CA that signed the server's certificate.
    ca_file: PathBuf,
    /// PEM of another CA.
    other_ca_file: PathBuf,
}

impl TlsPostgres {
    fn start() -> TlsPostgres {
        let bin = postgres_bin();
        if is_root()
            && !Command::new("id")
                .arg("postgres")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        {
            let _ = Command::new("useradd")
                .args(["--system", "--no-create-home", "postgres"])
                .status();
        }
        let dir = tempfile::Builder::new()
            .prefix("atrium-pgtls-")
            .tempdir()
            .expect("temp dir");
        let data = dir.path().join("data");
        let certs = dir.path().join("certs");
        std::fs::create_dir_all(&certs).expect("certs dir");

        // The server's certificate names 127.0.0.1 only (not `localhost`).
        let root = ca("atrium test CA");
        let other = ca("another CA");
        let key = KeyPair::generate().expect("server key");
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        let cert = params
            .signed_by(&key, &root.cert, &root.key)
            .expect("server certificate");
        let ca_file = dir.path().join("ca.pem");
        let other_ca_file = dir.path().join("other-ca.pem");
        std::fs::write(&ca_file, root.cert.pem()).expect("write ca");
        std::fs::write(&other_ca_file, other.cert.pem()).expect("write other ca");
        std::fs::write(certs.join("server.crt"), cert.pem()).expect("write cert");
        std::fs::write(certs.join("server.key"), key.serialize_pem()).expect("write key");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            certs.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .expect("chmod key");
        if is_root() {
            let ok = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(dir.path())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "chown the test folder to postgres");
        }

        let data_s = data.to_string_lossy().to_string();
        let out = pg_tool(
            &bin,
            "initdb",
            &["-D", &data_s, "-U", "atrium", "--auth=trust", "-E", "UTF8"],
        );
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // TLS connections only: a plain one finds no pg_hba line.
        std::fs::write(
            data.join("pg_hba.conf"),
            "hostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
        )
        .expect("write pg_hba.conf");

        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories='' \
             -c ssl=on -c ssl_cert_file={c}/server.crt -c ssl_key_file={c}/server.key \
             -c fsync=off -c max_connections=20",
            c = certs.display()
        );
        let log = dir
            .path()
            .join("postgres.log")
            .to_string_lossy()
            .to_string();
        let out = pg_tool(
            &bin,
            "pg_ctl",
            &[
                "-D", &data_s, "-l", &log, "-w", "-t", "30", "-o", &opts, "start",
            ],
        );
        let pg = TlsPostgres {
            bin,
            dir,
            port,
            ca_file,
            other_ca_file,
        };
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        pg
    }

    /// A URL to the `postgres` database on `host`, with `query` appended.
    fn url(&self, host: &str, query: &str) -> String {
        format!("postgres://atrium@{host}:{}/postgres?{query}", self.port)
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data").to_string_lossy().to_string();
        let _ = pg_tool(
            &self.bin,
            "pg_ctl",
            &["-D", &data, "-m", "immediate", "stop"],
        );
    }
}

/// Connects the node's store; its error text when it cannot.
async fn store(url: &str) -> Result<PgStore, String> {
    match tokio::time::timeout(Duration::from_secs(20), PgStore::connect(url, 2)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => panic!("connecting {url} took over 20 s"),
    }
}

async fn encrypted(url: &str) -> bool {
    let s = store(url)
        .await
        .unwrap_or_else(|e| panic!("{url}: cannot connect: {e}"));
    s.encrypted().await.expect("pg_stat_ssl")
}

async fn refused(url: &str, needles: &[&str]) {
    let e = match store(url).await {
        Ok(_) => panic!("{url}: connected, but should have been refused"),
        Err(e) => e,
    };
    for n in needles {
        assert!(e.contains(n), "{url}: the error {e:?} does not say {n:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_speaks_tls_as_sslmode_asks() {
    let pg = tokio::task::spawn_blocking(TlsPostgres::start)
        .await
        .expect("start Postgres");
    let ca = pg.ca_file.display().to_string();
    let other = pg.other_ca_file.display().to_string();

    // Encrypted, as the server sees it.
    assert!(encrypted(&pg.url("127.0.0.1", "sslmode=require")).await);
    assert!(
        encrypted(&pg.url("127.0.0.1", "")).await,
        "prefer, the default"
    );
    assert!(encrypted(&pg.url("127.0.0.1", "sslmode=prefer")).await);
    // The certificate checked against the right CA, with and without the host name.
    let full = format!("sslmode=verify-full&sslrootcert={ca}");
    assert!(encrypted(&pg.url("127.0.0.1", &full)).await);
    let verify_ca = format!("sslmode=verify-ca&sslrootcert={ca}");
    assert!(encrypted(&pg.url("localhost", &verify_ca)).await);
    assert!(
        encrypted(&pg.url(
            "127.0.0.1",
            &format!("sslmode=require&sslrootcert={ca}&application_name=tls-test")
        ))
        .await
    );

    // A certificate from another CA.
    refused(
        &pg.url(
            "127.0.0.1",
            &format!("sslmode=verify-full&sslrootcert={other}"),
        ),
        &["TLS", "UnknownIssuer"],
    )
    .await;
    refused(
        &pg.url(
            "127.0.0.1",
            &format!("sslmode=verify-ca&sslrootcert={other}"),
        ),
        &["TLS", "UnknownIssuer"],
    )
    .await;
    // `require` with a root certificate checks the chain, as libpq does.
    refused(
        &pg.url("127.0.0.1", &format!("sslmode=require&sslrootcert={other}")),
        &["TLS", "UnknownIssuer"],
    )
    .await;
    // The right CA, but a host name the certificate does not carry.
    refused(
        &pg.url("localhost", &full),
        &["TLS", "not valid for name \"localhost\""],
    )
    .await;
    // No TLS against a hostssl-only server.
    refused(
        &pg.url("127.0.0.1", "sslmode=disable"),
        &["no pg_hba.conf entry", "no encryption"],
    )
    .await;
    // A root certificate file that is not there.
    refused(
        &pg.url(
            "127.0.0.1",
            "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        ),
        &["sslrootcert=/nonexistent/ca.pem"],
    )
    .await;
}
