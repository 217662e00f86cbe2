//! Peers that find a file's node as the router does (`connect`), keep a model of its
//! document (`document`) while they edit (`editing`), crowds of them (`crowd`), and
//! checks of what they hold against the store (`verify`).

mod connect;
mod crowd;
mod document;
mod editing;
mod verify;

use super::*;

pub use crowd::*;
pub use verify::*;

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
    pub(super) fn closed(&mut self, code: u16) {
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
}
