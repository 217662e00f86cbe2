//! A file with an owner, and two bystanders measuring relay latency in it.

use super::*;

/// A node and a new account's file on it, with an edit link.
pub(super) struct Room {
    pub(super) node: Node,
    file: SharedFile,
}

pub(super) async fn room(envs: &[(&str, &str)]) -> Room {
    let mut all: Vec<(&str, &str)> = FAST_HASH.to_vec();
    all.extend_from_slice(envs);
    let node = Node::start(&all).await;
    let owner = new_account(&node, "owner").await;
    Room::of(node, owner).await
}

/// A case under way: the lock that keeps the other cases out (held as long
/// as the guard lives), the room, its probe, and the relay latency measured
/// before the attack.
pub(super) type Case = (
    tokio::sync::MutexGuard<'static, ()>,
    Room,
    Probe,
    Vec<Duration>,
);

/// Takes the lock, starts a room on a node with `envs` and measures its latency.
pub(super) async fn case(envs: &[(&str, &str)]) -> Case {
    let serial = SERIAL.lock().await;
    let r = room(envs).await;
    let mut probe = Probe::join(&r).await;
    let base = probe.sample(30).await;
    (serial, r, probe, base)
}

impl Room {
    /// A room of a new file of `owner`'s with an edit link, on `node`.
    pub(super) async fn of(node: Node, owner: String) -> Room {
        let file = file_of(&node, owner, "Under fire", "edit").await;
        Room { node, file }
    }

    /// A room of a new file of `owner`'s holding `doc`, its link set to `edit`.
    pub(super) async fn holding(node: Node, owner: String, doc: Value) -> Room {
        let created = create_file(&node, &owner, "Large", Some(doc)).await;
        let id = s(&created["id"]).to_string();
        set_link(&node, &owner, &id, "edit").await;
        let file = SharedFile {
            owner,
            id,
            edit_key: s(&created["edit_key"]).to_string(),
            view_key: s(&created["view_key"]).to_string(),
        };
        Room { node, file }
    }
}

/// The room's file: its id, its owner's token and its keys, as `r.id` and so on.
impl std::ops::Deref for Room {
    type Target = SharedFile;

    fn deref(&self) -> &SharedFile {
        &self.file
    }
}

/// What the receiving bystander saw besides the probe patches.
#[derive(Default)]
pub(super) struct Seen {
    /// Relayed patches by person id.
    pub(super) patches_by: HashMap<String, usize>,
    pub(super) joins: Vec<Value>,
    pub(super) leaves: Vec<Value>,
    /// How the receiver's or the sender's socket ended, if it did.
    pub(super) ended: Option<String>,
}

/// Two bystanders: `A` (the owner) edits one node, `B` (a viewer) receives.
/// Both are read all the time on their own tasks, so neither ever lags.
pub(super) struct Probe {
    pub(super) tx: SplitSink<Ws, Message>,
    pub(super) arrivals: mpsc::UnboundedReceiver<(u64, Instant)>,
    pub(super) next: u64,
    pub seen: Arc<Mutex<Seen>>,
    pub(super) acks: Arc<AtomicU64>,
}

impl Probe {
    pub(super) async fn join(r: &Room) -> Probe {
        let (a, wa) = Client::join(&r.node, &r.id, &Hello::token(&r.owner)).await;
        let (b, _) = Client::join(&r.node, &r.id, &Hello::key(&r.view_key)).await;
        let sender = you(&wa);
        let (tx, mut a_rx) = a.ws.split();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let acks = Arc::new(AtomicU64::new(0));
        let (arrive_tx, arrivals) = mpsc::unbounded_channel();

        let (a_seen, a_acks) = (seen.clone(), acks.clone());
        tokio::spawn(async move {
            while let Some(msg) = a_rx.next().await {
                match msg {
                    Ok(Message::Text(t)) => {
                        let m: Value = serde_json::from_str(t.as_str()).expect("JSON");
                        match s(&m["type"]) {
                            "ack" => {
                                a_acks.fetch_max(m["id"].as_u64().expect("id"), Ordering::SeqCst);
                            }
                            "reject" => panic!("the probe's patch was rejected: {m}"),
                            _ => {}
                        }
                    }
                    Ok(Message::Close(f)) => {
                        a_seen.lock().unwrap().ended = Some(format!("sender closed: {f:?}"));
                        return;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        a_seen.lock().unwrap().ended = Some(format!("sender error: {e}"));
                        return;
                    }
                }
            }
        });

        let (b_seen, me) = (seen.clone(), sender.clone());
        let mut b = b;
        tokio::spawn(async move {
            loop {
                match b.next_event(Duration::from_secs(3600)).await {
                    Event::Json(m) => {
                        let mut seen = b_seen.lock().unwrap();
                        match s(&m["type"]) {
                            "patch" => {
                                let by = s(&m["by"]).to_string();
                                if by == me {
                                    if let Some(n) = m["ops"][0]["props"]["n"].as_u64() {
                                        let _ = arrive_tx.send((n, Instant::now()));
                                    }
                                } else {
                                    *seen.patches_by.entry(by).or_default() += 1;
                                }
                            }
                            "join" => seen.joins.push(m),
                            "leave" => seen.leaves.push(m),
                            _ => {}
                        }
                    }
                    Event::Timeout => {}
                    other => {
                        b_seen.lock().unwrap().ended = Some(format!("receiver: {other:?}"));
                        return;
                    }
                }
            }
        });
        Probe {
            tx,
            arrivals,
            next: 0,
            seen,
            acks,
        }
    }

    /// One edit by A; the time until B has it.
    pub(super) async fn once(&mut self) -> Duration {
        self.next += 1;
        let id = self.next;
        let msg = patch_msg(id, vec![put("probe", json!({ "n": id }))]).to_string();
        let start = Instant::now();
        tokio::time::timeout(WAIT, self.tx.send(Message::text(msg)))
            .await
            .expect("probe send timed out")
            .expect("probe send failed");
        loop {
            let got = tokio::time::timeout(WAIT, self.arrivals.recv()).await;
            match got {
                Ok(Some((n, at))) if n == id => return at - start,
                Ok(Some(_)) => continue,
                _ => panic!(
                    "the bystander did not receive probe edit {id} within {WAIT:?} ({:?})",
                    self.seen.lock().unwrap().ended
                ),
            }
        }
    }

    /// `n` relays, one every 25 ms at most (under the socket's message rate).
    pub(super) async fn sample(&mut self, n: usize) -> Vec<Duration> {
        self.sample_while(&AtomicBool::new(true), n, n).await
    }

    /// Relays until `done` is set (at least `min`, at most `max` of them).
    pub(super) async fn sample_while(
        &mut self,
        done: &AtomicBool,
        min: usize,
        max: usize,
    ) -> Vec<Duration> {
        let mut out = Vec::new();
        while out.len() < max && (out.len() < min || !done.load(Ordering::SeqCst)) {
            out.push(self.once().await);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        out
    }

    /// Relay latency and the node's health answer time, one of each every
    /// `pause`, until `done` and at least `min` samples (never 5,000: an attack
    /// that never ends fails the case).
    pub(super) async fn sample_with_health(
        &mut self,
        node: &Node,
        done: &AtomicBool,
        min: usize,
        pause: Duration,
    ) -> (Vec<Duration>, Vec<Duration>) {
        let (mut during, mut health) = (Vec::new(), Vec::new());
        while !done.load(Ordering::SeqCst) || during.len() < min {
            during.push(self.once().await);
            health.push(health_ok(node).await);
            tokio::time::sleep(pause).await;
            assert!(during.len() < 5000, "the attack never ended");
        }
        (during, health)
    }

    /// Waits until every probe edit is acked; asserts both bystanders are
    /// still connected.
    pub(super) async fn settle(&self) {
        let deadline = Instant::now() + WAIT;
        while self.acks.load(Ordering::SeqCst) < self.next {
            assert!(Instant::now() < deadline, "probe edits were not all acked");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let ended = self.seen.lock().unwrap().ended.clone();
        assert!(ended.is_none(), "a bystander was disconnected: {ended:?}");
    }
}

/// Asserts that the file holds exactly the probe's edits plus `extra` nodes,
/// at version `probe.next + extra_versions`.
pub(super) async fn assert_untouched(r: &Room, probe: &Probe, extra_versions: u64, extra: Value) {
    probe.settle().await;
    let (version, doc) = get_doc(&r.node, &r.owner, &r.id).await;
    let mut want = extra;
    if probe.next > 0 {
        want["probe"] = json!({ "n": probe.next });
    }
    assert_eq!(
        version,
        probe.next + extra_versions,
        "the version moved by something else"
    );
    assert_eq!(
        doc, want,
        "the document changed beyond the bystanders' edits"
    );
}

pub(super) async fn health_ok(node: &Node) -> Duration {
    let start = Instant::now();
    let r = get(node, "/health", None).await;
    r.assert_status(200);
    start.elapsed()
}

/// How long an attack run by [`attack`] lasts.
pub(super) const ATTACK: Duration = Duration::from_secs(6);

/// Runs `attacker` (given its number) on `n` tasks until [`ATTACK`] is over while the
/// probe samples; what each returned, the probe's samples and the time it took.
pub(super) async fn attack<F, T>(
    probe: &mut Probe,
    n: usize,
    attacker: F,
) -> (Vec<T>, Vec<Duration>, f64)
where
    F: Fn(usize, Arc<AtomicBool>) -> tokio::task::JoinHandle<T>,
{
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..n).map(|k| attacker(k, done.clone())).collect();
    let stop = {
        let done = done.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ATTACK).await;
            done.store(true, Ordering::SeqCst);
        })
    };
    let during = probe.sample_while(&done, 20, 100_000).await;
    stop.await.expect("timer");
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("attacker"));
    }
    (out, during, started.elapsed().as_secs_f64())
}
