//! One simulated person: a socket that says hello, then edits (editors) and moves a cursor on
//! fixed schedules, and records what comes back.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::measure::Measures;
use crate::setup::ClientPlan;

mod delivered;
mod join;
mod life;
mod messages;
mod receive;
mod send;
mod session;
mod state;

#[cfg(test)]
mod tests;

/// One presence message in this many is parsed for latency; all are counted.
pub const PRESENCE_SAMPLE: u64 = 10;

/// How the run tells clients to end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    Running,
    /// Stop sending, keep reading (answers to what was sent still count).
    Quiet,
    /// Close the socket with a close handshake.
    Close,
    /// Drop the connection with no close handshake.
    Drop,
}

/// What one client needs.
pub struct Client {
    pub plan: ClientPlan,
    /// The file's socket address through each router; the client starts on one and moves to
    /// the next when its router cannot be reached, as behind a load balancer's health checks.
    pub ws_urls: Vec<String>,
    /// Which of `ws_urls` it uses now.
    pub via: usize,
    pub key: String,
    pub token: Option<String>,
    pub edit_rate: f64,
    pub presence_rate: f64,
    pub measures: Arc<Measures>,
    pub end: watch::Receiver<End>,
    /// Cluster mode: keep a model of the document, mark every patch, and reconnect and resume
    /// when the server closes the socket.
    pub track: bool,
    /// Come back after a first join that was told to (1013 with its hint, 4009, 1012), as
    /// a real client does: on in cluster mode and in a `--storm`.
    pub comes_back: bool,
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Versions a client has seen; a gap is a dropped patch.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Versions {
    pub last: u64,
}

impl Versions {
    /// Notes version `v`; returns (versions skipped, whether it came out of order).
    pub fn see(&mut self, v: u64) -> (u64, bool) {
        if v <= self.last {
            return (0, true);
        }
        let gap = v - self.last - 1;
        self.last = v;
        (gap, false)
    }
}

/// The message type when the message starts with it (the node writes patches, acks and
/// presences that way), without parsing the rest.
pub fn leading_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("{\"type\":\"")?;
    rest.split_once('"').map(|(t, _)| t)
}

/// A cursor moving on a circle, a little further each step.
pub fn cursor_at(index: usize, step: u64) -> (f64, f64) {
    let angle = (step as f64) * 0.05 + index as f64;
    let x = 400.0 + 300.0 * angle.cos();
    let y = 300.0 + 200.0 * angle.sin();
    ((x * 10.0).round() / 10.0, (y * 10.0).round() / 10.0)
}

/// The prop a tracked patch sets on its rectangle, unique per (client, op id): the final
/// document holds every acked patch's mark.
pub fn mark(index: usize, op_id: u64) -> String {
    format!("c{index}_{op_id}")
}

/// What a client hands back at the end.
#[derive(Debug, Default)]
pub struct ClientEnd {
    pub index: usize,
    pub file: usize,
    pub rect: String,
    /// Tracking mode: the client's document and version (None: it never joined).
    pub doc: Option<(u64, Map<String, Value>)>,
    /// Its patches acked, with when.
    pub acked: Vec<(u64, std::time::Instant)>,
    /// Tracking mode: the versions it was given, with their patches, in order.
    pub seen: crate::history::Seen,
    /// Whether its socket was open when the run ended.
    pub connected_at_end: bool,
}

/// How one connection ended.
enum Ended {
    /// The run ended it (close or drop).
    Run(End),
    /// The server closed it or it was lost.
    Lost,
}

impl Client {
    fn count_close(&self, code: &str) {
        Measures::count(&self.measures.unexpected_closes, code);
    }

    fn run_going(&self) -> bool {
        matches!(*self.end.borrow(), End::Running | End::Quiet)
    }
}
