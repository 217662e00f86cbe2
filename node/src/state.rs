//! What every request, socket and background task of a node shares.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use atrium_coordinator::{Coordinator, NodeId};
use tokio::sync::watch;

use crate::auth::Hasher;
use crate::config::NodeConfig;
use crate::doc::DocLimits;
use crate::limits::{AddressCounts, KeyedLimiter};
use crate::room::registry::Rooms;
use crate::sessions::SessionSockets;
use crate::store::Store;

/// What every request and socket shares.
pub struct AppState {
    /// This node's metrics (each node instance has its own).
    pub metrics: Arc<crate::metrics::Metrics>,
    pub config: Arc<NodeConfig>,
    pub store: Arc<dyn Store>,
    pub rooms: Rooms,
    pub sockets: Arc<SessionSockets>,
    pub hasher: Hasher,
    /// App tokens: the verifier (with the revocations) and the sockets they opened.
    pub app_tokens: crate::apptoken::Verifier,
    pub app_sockets: Arc<crate::apptoken::AppSockets>,
    pub limits: DocLimits,
    pub coordinator: Arc<dyn Coordinator>,
    pub node: NodeId,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted: Vec<crate::limits::Network>,
    pub sockets_by_address: Arc<AddressCounts>,
    /// Socket upgrades per client address, paced (`ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND`).
    pub upgrades_by_address: KeyedLimiter<std::net::IpAddr>,
    /// Requests a second per client address, socket upgrades and accepted server API
    /// keys aside (`http::pacing`).
    pub requests_by_address: KeyedLimiter<std::net::IpAddr>,
    pub auth_by_address: KeyedLimiter<std::net::IpAddr>,
    pub auth_by_email: KeyedLimiter<String>,
    /// Sign-ins per (client address, email), before hashing.
    pub signin_by_address_email: KeyedLimiter<(std::net::IpAddr, String)>,
    /// Wrong passwords per email, from every address (never refuses a right one).
    pub signin_failures_by_email: KeyedLimiter<String>,
    /// File creations per account (`ATRIUM_FILE_CREATES_PER_MINUTE`).
    pub file_creates: KeyedLimiter<crate::ids::AccountId>,
    /// Versions named per file and party (`ATRIUM_VERSIONS_NAMED_PER_MINUTE`).
    pub versions_named: KeyedLimiter<(crate::ids::FileId, crate::limits::Party)>,
    /// Restores per file and party (`ATRIUM_RESTORES_PER_MINUTE`).
    pub restores: KeyedLimiter<(crate::ids::FileId, crate::limits::Party)>,
    /// Changes of a file's settings per file (`ATRIUM_FILE_CHANGES_PER_MINUTE`).
    pub file_changes: KeyedLimiter<crate::ids::FileId>,
    /// Turns and memory for work on stored versions (reads, comparisons, restores).
    pub history_work: crate::history::HistoryWork,
    /// Bytes of documents sent to each client address (`ATRIUM_DOCUMENT_BYTES_PER_IP_*`),
    /// shared with the rooms, which charge welcomes to it.
    pub documents_sent: Arc<KeyedLimiter<std::net::IpAddr>>,
    /// Bytes of versions rebuilt for each account or app person (read or compared), from
    /// any address: the same rate as [`Self::documents_sent`].
    pub documents_rebuilt: KeyedLimiter<String>,
    /// Bytes each client address's sockets bring in (`ATRIUM_WS_BYTES_PER_IP_*`); `None`: off.
    pub socket_bytes_by_address: Option<Arc<KeyedLimiter<std::net::IpAddr>>>,
    /// Bytes of unfinished large messages each client address's sockets hold.
    pub incoming_by_address: Arc<crate::memory::IncomingShares>,
    /// What each account's files keep in the store (`ATRIUM_STORAGE_PER_ACCOUNT`),
    /// shared with the rooms.
    pub storage: Arc<crate::storage::Storage>,
    /// Server API requests per API key (by key id).
    pub server_api: KeyedLimiter<String>,
    /// Open TCP connections on the main address (`ATRIUM_MAX_CONNECTIONS`).
    pub connections: Arc<crate::limits::ConnectionCap>,
    /// Open TCP connections per client address (`ATRIUM_CONNECTIONS_PER_IP`; `None`:
    /// no cap).
    pub connections_by_address: Option<Arc<AddressCounts>>,
    /// The node's memory budget: new work is refused before it is exceeded.
    pub memory: Arc<crate::memory::MemoryGuard>,
    /// Whole-document answers clients still hold, shared by requests for the same one.
    pub answers: crate::memory::SharedAnswers,
    /// What those answers hold, by their files' owner and by the reading address, counted
    /// as open rooms are (and apart from them).
    pub answer_shares: Arc<crate::room::shares::RoomShares>,
    /// Turns for joins, so a storm is taken at the pace the node carries.
    pub admission: crate::admission::Admission,
    /// The runtime's scheduling delay, sampled for /health.
    pub delay: Arc<crate::stats::DelayProbe>,
    /// Webhooks: the recorder's way in and the sender's wake-up.
    pub webhooks: Arc<crate::webhook::handle::Webhooks>,
    pub(crate) accepting: AtomicBool,
    /// Turns true when shutdown begins (sockets still saying hello close with 1012).
    pub stopping: watch::Receiver<bool>,
}

impl AppState {
    /// Whether the node takes new work (false once shutdown begins).
    pub fn accepting(&self) -> bool {
        self.accepting.load(Ordering::Acquire)
    }
}
