//! Stopping the cluster: cleanly with [`Cluster::stop`], at once on drop.

use std::time::{Duration, Instant};

use anyhow::anyhow;

use super::postgres::pg_connect;
use super::Cluster;

impl Cluster {
    /// Stops the routers, the nodes, drops the scratch database, stops the scratch services and
    /// removes the temporary folder. Returns a line per step that did not go cleanly.
    pub async fn stop(mut self) -> Vec<String> {
        let mut notes = Vec::new();
        // Every router told at once, so their drains overlap.
        let routers: Vec<_> = self
            .routers
            .iter_mut()
            .filter_map(|r| Some((r.name.clone(), r.take()?)))
            .collect();
        for (_, r) in &routers {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(r.id() as libc::pid_t, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for (name, mut r) in routers {
            loop {
                match r.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(50)).await
                    }
                    _ => {
                        let _ = r.kill();
                        let _ = r.wait();
                        notes.push(format!("{name} killed after 5 s"));
                        break;
                    }
                }
            }
        }
        let nodes = std::mem::take(&mut self.nodes);
        let stops: Vec<_> = nodes
            .into_iter()
            .map(|n| tokio::task::spawn_blocking(move || (n.id.clone(), n.process.stop())))
            .collect();
        for s in stops {
            if let Ok((id, status)) = s.await {
                if status.contains("after") {
                    notes.push(format!("node {id}: {status}"));
                }
            }
        }
        if let Some(name) = self.db_name.take() {
            let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
            let dropped = async {
                pg_connect(&self.admin_db)
                    .await?
                    .batch_execute(&sql)
                    .await
                    .map_err(anyhow::Error::from)
            };
            if let Err(e) = tokio::time::timeout(Duration::from_secs(10), dropped)
                .await
                .unwrap_or_else(|_| Err(anyhow!("timed out")))
            {
                notes.push(format!("could not drop database {name}: {e:#}"));
            }
        }
        self.stop_services();
        notes
    }

    pub(super) fn stop_services(&mut self) {
        self.remove_clock_files();
        // Every link whole, the table and the cgroups gone.
        self.links = None;
        self.replication_delay = None;
        for pg in [self.postgres.take(), self.postgres_standby.take()]
            .into_iter()
            .flatten()
        {
            let _ = pg.stop("immediate");
        }
        let _ = self.kill_nats();
        self.nats = None;
        let _ = self.kill_redis();
        self.redis = None;
        if super::keep_run_folders() {
            eprintln!("run folder kept: {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A failed start or a panic: no time for niceties, but leave nothing running.
        for r in &mut self.routers {
            if let Some(mut r) = r.take() {
                let _ = r.kill();
                let _ = r.wait();
            }
        }
        for n in &mut self.nodes {
            n.process.kill9();
        }
        self.nodes.clear();
        if let Some(name) = self.db_name.take() {
            atrium_testkit::postgres::drop_database(&self.admin_db, &name);
        }
        self.stop_services();
    }
}
