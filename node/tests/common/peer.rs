//! Peers that find a file's node as the router does, crowds of them, and checks of
//! what they hold against the store.

use super::*;

/// A client of one file that finds the file's node like a router would
/// (ring owner first, on 4009 the next node, with a short backoff), keeps a
/// model of the document from its welcome, the relays and its acks, and
/// resumes after every disconnection, resending what is unconfirmed with the
/// original op ids.
pub struct Peer {
    pub file: String,
    pub hello: Hello,
    pub label: String,
    pub ws: Option<Client>,
    /// The node it is connected to (or was last).
    pub at: Option<String>,
    pub version: u64,
    pub doc: Map<String, Value>,
    next_op: u64,
    pub unacked: BTreeMap<u64, Vec<Value>>,
    /// op id -> version, for every acked patch.
    pub acked: BTreeMap<u64, u64>,
    /// Close codes of welcomed sockets, as the server closed them (0: lost
    /// without a close frame).
    pub closes: Vec<(Instant, u16)>,
    /// Hello refusals: (node, close code).
    pub refusals: Vec<(String, Option<u16>)>,
    /// Every welcome: (when, node).
    pub welcomes: WelcomeLog,
    /// Notice codes received.
    pub notices: Vec<u64>,
    /// Closes and notices as they happen, readable while the peer runs.
    pub met: MetLog,
    welcomed_once: bool,
}

impl Peer {
    /// Records that the welcomed socket ended with `code` (0: no close frame).
    fn closed(&mut self, code: u16) {
        let at = Instant::now();
        self.closes.push((at, code));
        self.met.lock().unwrap().closes.push((at, code));
        self.ws = None;
    }

    pub fn new(file: &str, hello: Hello) -> Peer {
        Peer {
            file: file.to_string(),
            label: hello.client[..8].to_string(),
            hello,
            ws: None,
            at: None,
            version: 0,
            doc: Map::new(),
            next_op: 0,
            unacked: BTreeMap::new(),
            acked: BTreeMap::new(),
            closes: Vec::new(),
            refusals: Vec::new(),
            welcomes: Arc::new(Mutex::new(Vec::new())),
            met: MetLog::default(),
            notices: Vec::new(),
            welcomed_once: false,
        }
    }

    /// The node id of each edit this client got acked, by op id.
    pub fn edit_node(&self, op: u64) -> String {
        format!("e{}-{op}", self.label)
    }

    /// The first welcome after `t`, if any.
    pub fn welcomed_after(&self, t: Instant) -> Option<(Instant, String)> {
        self.welcomes
            .lock()
            .unwrap()
            .iter()
            .find(|(at, _)| *at > t)
            .cloned()
    }

    /// Connects the way a router sends a client: to the file's live lease
    /// holder when there is one, else to the ring owner of the up nodes. The
    /// holder is learnt as a router would not need to: after a 4009, by asking
    /// the refusing node over HTTP (its 409 `moved` names the holder). `first`
    /// is tried before anything else. Retries with a short backoff until
    /// `patience` runs out; panics on a refusal a client must not retry
    /// (4001, 4003, 4004, 4029, ...).
    pub async fn connect(&mut self, dir: &Directory, first: Option<&str>, patience: Duration) {
        let deadline = Instant::now() + patience;
        let mut backoff = Duration::from_millis(50);
        let mut next: Option<String> = first.map(str::to_string);
        loop {
            let target = match next.take() {
                Some(id) => id,
                None => dir.owner(&self.file),
            };
            let port = dir.port_of(&target);
            let mut hello = self.hello.clone();
            hello.since = self.welcomed_once.then_some(self.version);
            let tried = if port == 0 {
                // A node still starting: not reachable yet.
                Err(Refusal::Unreachable("starting".into()))
            } else {
                attempt(port, &self.file, &hello, Duration::from_secs(3)).await
            };
            match tried {
                Ok((c, welcome)) => {
                    self.ws = Some(c);
                    self.at = Some(target.clone());
                    self.welcomed(&welcome);
                    self.welcomes.lock().unwrap().push((Instant::now(), target));
                    self.resend().await;
                    return;
                }
                Err(Refusal::Closed(code)) => {
                    self.refusals.push((target.clone(), code));
                    match code {
                        Some(4009) => {
                            if let Some(holder) = self.ask_holder(port).await {
                                if holder != target {
                                    next = Some(holder);
                                    continue;
                                }
                            }
                        }
                        Some(1011..=1013) | None => {}
                        Some(other) => panic!(
                            "peer {} of {} refused by {target} with close {other}",
                            self.label, self.file
                        ),
                    }
                }
                Err(Refusal::Unreachable(_)) => {}
            }
            assert!(
                Instant::now() < deadline,
                "peer {} found no node serving {} within {patience:?} (refusals: {:?})",
                self.label,
                self.file,
                self.refusals
            );
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(400));
        }
    }

    /// The holder a node names for this file (its 409 `moved`), if any.
    async fn ask_holder(&self, port: u16) -> Option<String> {
        let auth;
        let header = match (&self.hello.token, &self.hello.key) {
            (Some(t), _) => {
                auth = bearer(t);
                ("authorization", auth.as_str())
            }
            (None, Some(k)) => ("x-atrium-key", k.as_str()),
            (None, None) => return None,
        };
        let path = format!("/api/files/{}", self.file);
        let r = try_http_at(port, "GET", &path, &[header], Duration::from_secs(2)).await?;
        if r.status != 409 {
            return None;
        }
        Some(moved_to(&r))
    }

    /// Takes in a welcome: the whole document, or what happened since.
    fn welcomed(&mut self, w: &Value) {
        let version = w["version"].as_u64().expect("welcome version");
        if let Some(resume) = w.get("resume").filter(|r| !r.is_null()) {
            assert!(
                self.welcomed_once,
                "a resume answered a hello without `since`: {w}"
            );
            for entry in resume.as_array().expect("resume is an array") {
                self.take(entry);
            }
            assert_eq!(
                self.version, version,
                "after its resume, peer {} is at {} but the welcome says {version}",
                self.label, self.version
            );
        } else {
            let doc = w["doc"].as_object().expect("welcome without doc or resume");
            assert!(
                version >= self.version,
                "peer {} of {} was at v{} and is welcomed back at v{version}: versions went back",
                self.label,
                self.file,
                self.version
            );
            self.doc = doc.clone();
            self.version = version;
        }
        self.welcomed_once = true;
    }

    /// Applies one relayed patch or ack (in a resume or live).
    fn take(&mut self, m: &Value) {
        match s(&m["type"]) {
            "ack" => {
                let id = m["id"].as_u64().expect("ack id");
                let v = m["v"].as_u64().expect("ack v");
                if let Some(ops) = self.unacked.remove(&id) {
                    if v <= self.version {
                        // Already part of a whole document this client was given.
                    } else {
                        assert_eq!(
                            v,
                            self.version + 1,
                            "peer {} of {}: ack of op {id} at v{v} after v{} (a gap)",
                            self.label,
                            self.file,
                            self.version
                        );
                        apply_ops(&mut self.doc, &ops);
                        self.version = v;
                    }
                    self.acked.insert(id, v);
                } else {
                    // A second ack of a resent patch: it must name a known version.
                    assert!(
                        self.acked.contains_key(&id) && v <= self.version,
                        "peer {} of {}: unexpected ack {m}",
                        self.label,
                        self.file
                    );
                }
            }
            "patch" => {
                let v = m["v"].as_u64().expect("patch v");
                assert_eq!(
                    v,
                    self.version + 1,
                    "peer {} of {}: relayed v{v} after v{} (a gap or a repeat)",
                    self.label,
                    self.file,
                    self.version
                );
                apply_ops(&mut self.doc, m["ops"].as_array().expect("ops"));
                self.version = v;
            }
            "reject" => panic!("peer {} of {} got {m}", self.label, self.file),
            "notice" => {
                let code = m["code"].as_u64().unwrap_or(0);
                self.notices.push(code);
                self.met.lock().unwrap().notices.push(code);
            }
            _ => {}
        }
    }

    /// Resends every unconfirmed patch, in order, with its original op id.
    async fn resend(&mut self) {
        let pending: Vec<(u64, Vec<Value>)> = self
            .unacked
            .iter()
            .map(|(id, ops)| (*id, ops.clone()))
            .collect();
        for (id, ops) in pending {
            if !self.send_raw(patch_msg(id, ops)).await {
                return;
            }
        }
    }

    async fn send_raw(&mut self, msg: Value) -> bool {
        let Some(c) = self.ws.as_mut() else {
            return false;
        };
        let sent = tokio::time::timeout(WAIT, c.ws.send(Message::text(msg.to_string()))).await;
        if !matches!(sent, Ok(Ok(()))) {
            // The read side reports how it ended.
            return false;
        }
        true
    }

    /// Sends a new patch: a node of its own (so acked edits can be found in
    /// the document) and a prop of a shared node (last writer wins).
    pub async fn edit(&mut self) -> u64 {
        self.next_op += 1;
        let id = self.next_op;
        let ops = vec![
            put(&self.edit_node(id), json!({"by": self.label, "n": id})),
            put("shared", json!({"last": format!("{}-{id}", self.label)})),
        ];
        self.unacked.insert(id, ops.clone());
        self.send_raw(patch_msg(id, ops)).await;
        id
    }

    /// Reads for up to `dur`, applying what comes. Returns false when the
    /// socket ended (its close code recorded; the caller reconnects).
    pub async fn pump(&mut self, dur: Duration) -> bool {
        let deadline = Instant::now() + dur;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(c) = self.ws.as_mut() else {
                return false;
            };
            match c.next_event(left).await {
                Event::Json(m) => self.take(&m),
                Event::Timeout => return true,
                Event::Close(code) => {
                    self.closed(code.unwrap_or(0));
                    return false;
                }
                Event::Ended | Event::Error(_) => {
                    self.closed(0);
                    return false;
                }
            }
        }
    }

    /// Reads (reconnecting when needed) until `cond` holds; panics after
    /// `dur`.
    pub async fn pump_until(
        &mut self,
        dir: &Directory,
        dur: Duration,
        what: &str,
        cond: impl Fn(&Peer) -> bool,
    ) {
        let deadline = Instant::now() + dur;
        while !cond(self) {
            assert!(
                Instant::now() < deadline,
                "peer {} of {}: {what} did not happen within {dur:?} (at {:?}, v{}, {} unacked, closes {:?})",
                self.label,
                self.file,
                self.at,
                self.version,
                self.unacked.len(),
                self.closes.iter().map(|c| c.1).collect::<Vec<_>>()
            );
            if self.ws.is_none() {
                self.connect(
                    dir,
                    None,
                    deadline.saturating_duration_since(Instant::now()),
                )
                .await;
                continue;
            }
            self.pump(Duration::from_millis(50)).await;
        }
    }

    /// Edits every `every` until `stop`, riding through every disconnection;
    /// then waits until every patch it sent is acked.
    pub async fn run(
        mut self,
        dir: Directory,
        every: Duration,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> Peer {
        use std::sync::atomic::Ordering;
        let mut next = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            if self.ws.is_none() {
                self.connect(&dir, None, Duration::from_secs(30)).await;
                continue;
            }
            if Instant::now() >= next {
                self.edit().await;
                next += every;
                if next < Instant::now() {
                    next = Instant::now() + every;
                }
            }
            let wait = next.saturating_duration_since(Instant::now());
            self.pump(wait.min(Duration::from_millis(100))).await;
        }
        self.pump_until(&dir, Duration::from_secs(30), "every patch acked", |p| {
            p.unacked.is_empty()
        })
        .await;
        self
    }
}

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
        let deadline = Instant::now() + dur;
        loop {
            let missing = self
                .mets
                .iter()
                .filter(|m| !done(&m.lock().unwrap()))
                .count();
            if missing == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{missing} clients did not meet {what} within {dur:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until every peer has been welcomed after `t`; panics after `dur`.
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

    pub async fn all_welcomed_after(&self, t: Instant, dur: Duration) {
        let deadline = Instant::now() + dur;
        loop {
            let missing: Vec<&str> = self
                .logs
                .iter()
                .filter(|(_, _, w)| !w.lock().unwrap().iter().any(|(at, _)| *at > t))
                .map(|(f, _, _)| f.as_str())
                .collect();
            if missing.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} clients were not welcomed again within {dur:?}; files: {missing:?}",
                missing.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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

/// Checks one file after a run: `GET /doc` (through its holder) has exactly
/// the acked patches, each version given once and none skipped, every acked
/// edit in the document, and every client's model equal to it. Returns the
/// holder and the version.
pub async fn verify_file(
    cluster: &Cluster,
    token: &str,
    file: &str,
    peers: &mut [&mut Peer],
) -> (String, u64) {
    let (holder, version, doc) = cluster.doc(token, file).await;
    let mut versions: BTreeMap<u64, (String, u64)> = BTreeMap::new();
    for p in peers.iter() {
        assert!(p.unacked.is_empty(), "peer {} has unacked patches", p.label);
        for (&op, &v) in &p.acked {
            if let Some(other) = versions.insert(v, (p.label.clone(), op)) {
                panic!(
                    "{file}: version {v} was given to op {op} of {} and to op {} of {}",
                    p.label, other.1, other.0
                );
            }
            let node = p.edit_node(op);
            assert_eq!(
                doc.get(&node),
                Some(&json!({"by": p.label, "n": op})),
                "{file}: the acked edit {node} (v{v}) is missing from GET /doc at v{version}"
            );
        }
    }
    let expected: Vec<u64> = (1..=version).collect();
    let got: Vec<u64> = versions.keys().copied().collect();
    assert_eq!(
        got, expected,
        "{file}: the acked versions must be exactly 1..={version}, once each"
    );
    for p in peers.iter_mut() {
        p.pump_until(&cluster.dir, Duration::from_secs(20), "catching up", |p| {
            p.version >= version
        })
        .await;
        assert_eq!(p.version, version, "peer {} went past GET /doc", p.label);
        assert_eq!(
            Value::Object(p.doc.clone()),
            doc,
            "{file}: client {} did not converge to GET /doc",
            p.label
        );
    }
    (holder, version)
}

/// Groups peers by file and verifies each file; returns file -> holder.
pub async fn verify_all(
    cluster: &Cluster,
    token: &str,
    peers: &mut [Peer],
) -> BTreeMap<String, String> {
    let mut files: Vec<String> = peers.iter().map(|p| p.file.clone()).collect();
    files.sort();
    files.dedup();
    let mut holders = BTreeMap::new();
    for f in files {
        let mut mine: Vec<&mut Peer> = peers.iter_mut().filter(|p| p.file == f).collect();
        let (holder, _) = verify_file(cluster, token, &f, &mut mine).await;
        holders.insert(f, holder);
    }
    holders
}
