//! Peers editing in the background, and waits on what all of them met.

use super::*;
use atrium_testkit::wait;

/// A peer's welcomes: (when, node), shared with the test.
pub type WelcomeLog = Arc<Mutex<Vec<(Instant, String)>>>;

/// What a peer met so far: closes of its welcomed sockets and notices.
#[derive(Default)]
pub struct Met {
    pub closes: Vec<(Instant, u16)>,
    pub notices: Vec<u64>,
}

/// A peer's [`Met`], shared with the test while it runs.
pub type MetLog = Arc<Mutex<Met>>;

/// Peers editing in the background, each on its own task.
pub struct Crowd {
    pub stop: Arc<std::sync::atomic::AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Peer>>,
    /// (file, label, welcomes) of every peer, in spawn order.
    pub logs: Vec<(String, String, WelcomeLog)>,
    /// What every peer met, in spawn order.
    pub mets: Vec<MetLog>,
}

impl Crowd {
    /// Starts every peer: each connects through `dir` and edits every `every`.
    pub fn spawn(dir: &Directory, peers: Vec<Peer>, every: Duration) -> Crowd {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut tasks = Vec::new();
        let mut logs = Vec::new();
        let mut mets = Vec::new();
        for p in peers {
            logs.push((p.file.clone(), p.label.clone(), p.welcomes.clone()));
            mets.push(p.met.clone());
            tasks.push(tokio::spawn(p.run(dir.clone(), every, stop.clone())));
        }
        Crowd {
            stop,
            tasks,
            logs,
            mets,
        }
    }

    /// Waits until `done` holds for what every peer met; panics after `dur`.
    pub async fn until_every_peer(&self, dur: Duration, what: &str, done: impl Fn(&Met) -> bool) {
        let all_met = || async {
            let missing = self.mets.iter().filter(|m| !done(&m.lock().unwrap()));
            match missing.count() {
                0 => Ok(()),
                missing => Err(missing),
            }
        };
        wait::until(dur, Duration::from_millis(50), all_met, |missing| {
            format!("{missing} clients did not meet {what} within {dur:?}")
        })
        .await;
    }

    /// Waits (at most `dur`) until every peer has been welcomed at least once.
    pub async fn all_welcomed(&self, dur: Duration) {
        self.all_welcomed_after(Instant::now() - Duration::from_secs(3600), dur)
            .await;
    }

    /// Asserts that every file's peers were last welcomed on `node`.
    pub fn assert_all_on(&self, node: &str) {
        for (file, on) in self.last_nodes() {
            assert_eq!(on.as_deref(), Some(node), "{file} is not on {node}");
        }
    }

    /// Waits until every peer has been welcomed after `t`; panics after `dur`.
    pub async fn all_welcomed_after(&self, t: Instant, dur: Duration) {
        let all_welcomed = || async {
            let missing: Vec<&str> = self
                .logs
                .iter()
                .filter(|(_, _, w)| !w.lock().unwrap().iter().any(|(at, _)| *at > t))
                .map(|(f, _, _)| f.as_str())
                .collect();
            match missing.is_empty() {
                true => Ok(()),
                false => Err(missing),
            }
        };
        wait::until(dur, Duration::from_millis(20), all_welcomed, |missing| {
            format!(
                "{} clients were not welcomed again within {dur:?}; files: {missing:?}",
                missing.len()
            )
        })
        .await;
    }

    /// For each file, the first welcome of any of its peers after `t`:
    /// (when, node).
    pub fn first_welcome_after(&self, t: Instant) -> BTreeMap<String, (Instant, String)> {
        let mut out: BTreeMap<String, (Instant, String)> = BTreeMap::new();
        for (file, _, w) in &self.logs {
            if let Some(first) = w.lock().unwrap().iter().find(|(at, _)| *at > t).cloned() {
                match out.get(file) {
                    Some(have) if have.0 <= first.0 => {}
                    _ => {
                        out.insert(file.clone(), first);
                    }
                }
            }
        }
        out
    }

    /// The node each peer was last welcomed at.
    pub fn last_nodes(&self) -> Vec<(String, Option<String>)> {
        self.logs
            .iter()
            .map(|(f, _, w)| (f.clone(), w.lock().unwrap().last().map(|x| x.1.clone())))
            .collect()
    }

    /// Stops editing and waits until every peer has every patch acked.
    pub async fn finish(self) -> Vec<Peer> {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut peers = Vec::new();
        for t in self.tasks {
            let p = tokio::time::timeout(Duration::from_secs(60), t)
                .await
                .expect("a client did not finish within 60 s")
                .unwrap_or_else(|e| {
                    std::panic::resume_unwind(e.into_panic());
                });
            peers.push(p);
        }
        peers
    }
}
