//! A scratch Postgres of the run's own, from `initdb` in the cluster's folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::{free_port, wait_port, Cluster};

/// `store-failover-async`: how far the WAL travels to the standby (each packet of the
/// replication stream is held this long).
pub const STANDBY_DELAY: Duration = Duration::from_millis(200);

/// A scratch Postgres started from `initdb` in a temporary folder.
pub(super) struct OwnPostgres {
    bin: PathBuf,
    dir: PathBuf,
    as_postgres: bool,
    port: u16,
    log: String,
    /// More `-c` settings of this server (a primary waiting for its standby).
    settings: String,
}

/// The folder holding Postgres's `initdb` and `pg_ctl`.
pub(super) fn postgres_bin() -> Result<PathBuf> {
    atrium_testkit::postgres::server_binaries().ok_or_else(|| {
        anyhow!(
            "no Postgres binaries (initdb, pg_ctl) found: install postgresql, or set \
                 ATRIUM_DATABASE_URL to a server where a scratch database may be created"
        )
    })
}

pub(super) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a Postgres tool, as the `postgres` user when we are root (Postgres refuses root).
pub(super) fn pg_tool(bin: &Path, tool: &str, as_postgres: bool, args: &[&str]) -> Result<()> {
    let mut cmd = if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(tool));
        c
    } else {
        Command::new(bin.join(tool))
    };
    // The server pg_ctl starts inherits this, not the generator's own pinning.
    crate::pin::place(&mut cmd, None);
    let out = cmd
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {tool}"))?;
    if !out.status.success() {
        bail!(
            "{tool} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// `pg_ctl start` on the scratch server's data, port and log.
pub(super) fn pg_start(pg: &OwnPostgres) -> Result<()> {
    let data = pg.dir.to_string_lossy().to_string();
    let opts = format!(
        "-c listen_addresses=127.0.0.1 -p {} -c unix_socket_directories='' \
         -c max_connections=300 {}",
        pg.port, pg.settings
    );
    pg_tool(
        &pg.bin,
        "pg_ctl",
        pg.as_postgres,
        &["-D", &data, "-l", &pg.log, "-w", "-o", &opts, "start"],
    )
}

pub(super) async fn pg_connect(url: &str) -> Result<tokio_postgres::Client> {
    atrium_testkit::postgres::try_connect(url)
        .await
        .map_err(|e| anyhow!("cannot connect to Postgres at {url}: {e}"))
}

impl OwnPostgres {
    /// `pg_ctl stop` in `mode` (fast: open sessions are cut off; immediate: no checkpoint).
    pub(super) fn stop(&self, mode: &str) -> Result<()> {
        let data = self.dir.to_string_lossy().to_string();
        pg_tool(
            &self.bin,
            "pg_ctl",
            self.as_postgres,
            &["-D", &data, "-m", mode, "-w", "stop"],
        )
    }
}

impl Cluster {
    /// Stops the scratch Postgres (fast shutdown: open sessions are cut off).
    pub fn stop_postgres(&mut self) -> Result<()> {
        let pg = self
            .postgres
            .as_ref()
            .context("Postgres is not a server of this run's own")?;
        pg.stop("fast")
    }

    /// How far the standby is behind the primary right now: bytes of WAL the primary wrote
    /// that the standby has not flushed yet (what a failover now would lose, on an
    /// asynchronous standby), and the time that took to flush, as the standby last reported
    /// (`flush_lag`, in ms; none when it has caught up and is idle).
    pub async fn standby_lag(&self) -> Result<(i64, Option<f64>)> {
        let pg = self
            .postgres
            .as_ref()
            .context("Postgres is not a server of this run's own")?;
        let url = format!("postgres://atrium@127.0.0.1:{}/postgres", pg.port);
        let row = pg_connect(&url)
            .await?
            .query_one(
                "SELECT coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)), 0)::int8, \
                 (max(extract(epoch FROM flush_lag)) * 1000)::float8 FROM pg_stat_replication",
                &[],
            )
            .await?;
        Ok((row.get(0), row.get(1)))
    }

    /// With a standby of the run's own: waits until it has replayed everything the primary
    /// wrote so far (the run's accounts and files), at most `within`. A failover then loses
    /// only what the load wrote, which is what `store-failover-async` measures; files lost
    /// because the standby had not yet seen them created would say nothing about patches.
    /// Without a standby, returns at once.
    pub async fn standby_caught_up(&self, within: Duration) -> Result<()> {
        let (Some(pg), Some(_)) = (self.postgres.as_ref(), self.postgres_standby.as_ref()) else {
            return Ok(());
        };
        let url = format!("postgres://atrium@127.0.0.1:{}/postgres", pg.port);
        let client = pg_connect(&url).await?;
        let target: String = client
            .query_one("SELECT pg_current_wal_lsn()::text", &[])
            .await?
            .get(0);
        let deadline = std::time::Instant::now() + within;
        loop {
            let replayed: bool = client
                .query_one(
                    "SELECT coalesce(bool_and(replay_lsn >= $1::text::pg_lsn), false) \
                     FROM pg_stat_replication",
                    &[&target],
                )
                .await?
                .get(0);
            if replayed {
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                bail!("the standby had not replayed the primary's WAL up to {target} within {within:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `kill -9` of the primary's postmaster (its sessions die with it), then the standby
    /// promoted: `--fault store-failover`. Returns how long the promotion took.
    pub fn fail_over_postgres(&mut self) -> Result<Duration> {
        let pg = self
            .postgres
            .as_ref()
            .context("Postgres is not a server of this run's own")?;
        let pid_file = std::fs::read_to_string(pg.dir.join("postmaster.pid"))
            .context("the primary's postmaster.pid")?;
        let pid: i32 = pid_file
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .context("a pid in postmaster.pid")?;
        // SAFETY: kill takes integers only.
        if unsafe { libc::kill(pid, libc::SIGKILL) } != 0 {
            bail!("kill -9 of the primary's postmaster {pid} failed");
        }
        let standby = self
            .postgres_standby
            .as_ref()
            .context("no standby of this run's own")?;
        let started = std::time::Instant::now();
        let data = standby.dir.to_string_lossy().to_string();
        pg_tool(
            &standby.bin,
            "pg_ctl",
            standby.as_postgres,
            &["-D", &data, "-w", "promote"],
        )?;
        Ok(started.elapsed())
    }

    /// Starts the scratch Postgres again on its port and data.
    pub async fn restart_postgres(&mut self) -> Result<()> {
        let pg = self
            .postgres
            .as_ref()
            .context("Postgres is not a server of this run's own")?;
        pg_start(pg)?;
        wait_port(pg.port, "postgres", Duration::from_secs(20)).await
    }

    pub(super) async fn start_postgres(&mut self) -> Result<String> {
        self.start_postgres_with("").await
    }

    async fn start_postgres_with(&mut self, settings: &str) -> Result<String> {
        let bin = postgres_bin()?;
        let dir = self.dir.join("postgres");
        std::fs::create_dir_all(&dir)?;
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&self.dir)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                bail!(
                    "running as root, Postgres must run as the `postgres` user, and {} could not \
                     be given to it (is there a postgres user?)",
                    self.dir.display()
                );
            }
        }
        let data = dir.join("data");
        let data_s = data.to_string_lossy().to_string();
        pg_tool(
            &bin,
            "initdb",
            as_postgres,
            &["-D", &data_s, "-U", "atrium", "--auth=trust", "-E", "UTF8"],
        )?;
        let port = free_port()?;
        let pg = OwnPostgres {
            bin,
            dir: data,
            as_postgres,
            port,
            log: dir.join("postgres.log").to_string_lossy().to_string(),
            settings: settings.to_owned(),
        };
        pg_start(&pg)?;
        self.postgres = Some(pg);
        wait_port(port, "postgres", Duration::from_secs(20)).await?;
        Ok(format!("postgres://atrium@127.0.0.1:{port}/postgres"))
    }

    /// A primary and a streaming standby, for `--fault store-failover`: `synchronous`, the
    /// primary waits for the standby before a commit returns (`synchronous_standby_names =
    /// '*'`); else it does not (`store-failover-async`). Answers a URL naming both, for the
    /// session that takes writes (`target_session_attrs=read-write`).
    pub(super) async fn start_postgres_pair(&mut self, synchronous: bool) -> Result<String> {
        let settings = if synchronous {
            "-c synchronous_standby_names='*' -c synchronous_commit=on"
        } else {
            ""
        };
        let primary = self.start_postgres_with(settings).await?;
        let pg = self.postgres.as_ref().context("the primary")?;
        let dir = self.dir.join("postgres-standby");
        std::fs::create_dir_all(&dir)?;
        if pg.as_postgres {
            let _ = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(&dir)
                .status();
        }
        let data = dir.join("data");
        let (data_s, port_s) = (data.to_string_lossy().to_string(), pg.port.to_string());
        pg_tool(
            &pg.bin,
            "pg_basebackup",
            pg.as_postgres,
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port_s,
                "-U",
                "atrium",
                "-D",
                &data_s,
                "-R",
                "-X",
                "stream",
                "--checkpoint=fast",
            ],
        )?;
        let standby = OwnPostgres {
            bin: pg.bin.clone(),
            dir: data,
            as_postgres: pg.as_postgres,
            port: free_port()?,
            log: dir.join("postgres.log").to_string_lossy().to_string(),
            settings: String::new(),
        };
        pg_start(&standby)?;
        wait_port(standby.port, "postgres standby", Duration::from_secs(20)).await?;
        let standby_port = standby.port;
        self.postgres_standby = Some(standby);
        // The primary counts it as its (synchronous) standby before the run begins.
        let client = pg_connect(&primary).await?;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let state = if synchronous { "sync" } else { "async" };
        loop {
            let row = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_replication WHERE sync_state = $1 \
                     AND state = 'streaming'",
                    &[&state],
                )
                .await?;
            if row.get::<_, i64>(0) > 0 {
                break;
            }
            if std::time::Instant::now() > deadline {
                bail!("the standby was not streaming ({state}) within 20 s");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if !synchronous {
            // A standby some distance away: the WAL reaches it STANDBY_DELAY after the primary
            // wrote (and acked) it. The walreceiver's end of the stream is the connection's
            // client port.
            let row = client
                .query_one("SELECT client_port FROM pg_stat_replication LIMIT 1", &[])
                .await?;
            let walreceiver: i32 = row.get(0);
            let primary_port = self.postgres.as_ref().context("the primary")?.port;
            self.replication_delay = Some(super::delay::Delayer::start_one_way(
                primary_port,
                u16::try_from(walreceiver).context("the walreceiver's port")?,
                STANDBY_DELAY,
            )?);
        }
        // Both hosts, the primary first; a session keeps the first that takes writes.
        let primary_port = self.postgres.as_ref().context("the primary")?.port;
        let both = primary.replacen(
            &format!("127.0.0.1:{primary_port}/"),
            &format!("127.0.0.1:{primary_port},127.0.0.1:{standby_port}/"),
            1,
        );
        Ok(format!("{both}?target_session_attrs=read-write"))
    }
}
