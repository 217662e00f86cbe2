//! A Postgres database of a test's own on the suite's server, dropped when done
//! ([`TestDatabase`]), and the connection and server helpers it is made of, which the
//! load tool's cluster harness uses too.

mod database;

pub use database::TestDatabase;

use std::time::Duration;

/// How long connecting, creating or dropping may take before the test fails.
const WAIT: Duration = Duration::from_secs(10);

/// A client for `url` (no TLS: the suite's server is on loopback), or a panic
/// naming the server that could not be reached.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    try_connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to Postgres at {url}: {e}"))
}

/// Like [`connect`], for callers that report the error themselves.
pub async fn try_connect(url: &str) -> Result<tokio_postgres::Client, String> {
    let connecting = tokio_postgres::connect(url, tokio_postgres::NoTls);
    let (client, connection) = tokio::time::timeout(WAIT, connecting)
        .await
        .map_err(|_| format!("connecting timed out after {WAIT:?}"))?
        .map_err(|e| match e.as_db_error() {
            Some(db) => format!("{e}: {}", db.message()),
            None => e.to_string(),
        })?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// The folder holding Postgres's `initdb` and `pg_ctl`: the newest under
/// /usr/lib/postgresql (Debian's layout), else the first on PATH; `None` if neither has them.
pub fn server_binaries() -> Option<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| rd.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs.reverse();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.into_iter()
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
}

/// `url` with its database name replaced by `name` (the query string is kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority..].find('/') {
        Some(slash) => &base[..authority + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

/// Drops a database, forcing its sessions off, and waits (at most [`WAIT`]). On a
/// thread and runtime of its own: callers may be inside a runtime, or unwinding.
pub fn drop_database(admin_url: &str, name: &str) {
    let admin = admin_url.to_string();
    let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
    let _ = std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async move {
            let _ = tokio::time::timeout(WAIT, async {
                if let Ok(client) = try_connect(&admin).await {
                    let _ = client.batch_execute(&sql).await;
                }
            })
            .await;
        });
    })
    .join();
}

#[cfg(test)]
mod tests;
