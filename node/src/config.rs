//! The node's settings: one typed struct, every field a command-line flag and an
//! `ATRIUM_*` variable with a default. `docs/operations.md` lists them all.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

#[derive(Debug, Clone, Parser)]
#[command(name = "atrium-node", version, about = "Atrium room node")]
pub struct NodeConfig {
    /// Address the HTTP API and sockets listen on.
    #[arg(long, env = "ATRIUM_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// Separate address for /metrics; when unset, /metrics is served on `bind` to
    /// server admins only (by their token).
    #[arg(long, env = "ATRIUM_ADMIN_BIND")]
    pub admin_bind: Option<SocketAddr>,

    /// Folder of the embedded store.
    #[arg(long, env = "ATRIUM_DATA", default_value = "./atrium-data")]
    pub data: PathBuf,

    /// This node's id, as shown by /health and used for leases in a cluster.
    #[arg(long, env = "ATRIUM_NODE_ID", default_value = "local")]
    pub node_id: String,

    /// Address the router reaches this node at; defaults to the bound address.
    #[arg(long, env = "ATRIUM_ADVERTISE")]
    pub advertise: Option<String>,

    /// How long a file lease and a membership record live without renewal; the
    /// node heartbeats and renews at a third of it.
    #[arg(long, env = "ATRIUM_LEASE_MS", default_value_t = 3_000)]
    pub lease_ms: u64,

    /// The coordinator: `memory://` (a single node), `nats://host:port` (JetStream)
    /// or `redis://host:port`; `?namespace=NAME` keeps fleets on one server apart.
    #[arg(long, env = "ATRIUM_COORDINATOR", default_value = "memory://")]
    pub coordinator: String,

    /// Postgres URL for accounts, files, snapshots and the op log (cluster mode);
    /// when unset, the embedded store under `ATRIUM_DATA` is used.
    #[arg(long, env = "ATRIUM_DATABASE_URL")]
    pub database_url: Option<String>,

    /// Postgres connections per node.
    #[arg(long, env = "ATRIUM_DATABASE_POOL", default_value_t = 16)]
    pub database_pool: usize,

    /// Files handed to their new ring owner per second when the ring changes.
    #[arg(long, env = "ATRIUM_REBALANCE_PER_SECOND", default_value_t = 20)]
    pub rebalance_per_second: u32,

    /// Emails of server admins, comma separated.
    #[arg(long, env = "ATRIUM_ADMINS", value_delimiter = ',')]
    pub admins: Vec<String>,

    /// Log filter (tracing's env-filter syntax), e.g. `info` or `atrium_node=debug`.
    #[arg(long, env = "ATRIUM_LOG", default_value = "info")]
    pub log: String,

    /// How long a socket may take to send its hello.
    #[arg(long, env = "ATRIUM_HELLO_TIMEOUT_MS", default_value_t = 10_000)]
    pub hello_timeout_ms: u64,

    /// Operations each room keeps for resume.
    #[arg(long, env = "ATRIUM_ROOM_OPS", default_value_t = 1000)]
    pub room_ops: usize,

    /// Bytes the recent operations of a room (kept for resume) may hold at most.
    #[arg(long, env = "ATRIUM_ROOM_OPS_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub room_ops_bytes: usize,

    /// How long a room nobody is in stays in memory.
    #[arg(long, env = "ATRIUM_ROOM_IDLE_MS", default_value_t = 600_000)]
    pub room_idle_ms: u64,

    /// Presence ticks a second in a room (each person gets at most one
    /// `presences` message per tick).
    #[arg(long, env = "ATRIUM_PRESENCE_HZ", default_value_t = 20)]
    pub presence_hz: u32,

    /// Rooms with more people than this tick at `ATRIUM_BUSY_PRESENCE_HZ`.
    #[arg(long, env = "ATRIUM_BUSY_ROOM", default_value_t = 50)]
    pub busy_room: usize,

    /// Presence ticks a second in busy rooms.
    #[arg(long, env = "ATRIUM_BUSY_PRESENCE_HZ", default_value_t = 5)]
    pub busy_presence_hz: u32,

    /// Most editors in a file; others with edit access join as viewers and wait.
    #[arg(long, env = "ATRIUM_ROOM_EDITORS", default_value_t = 100)]
    pub room_editors: usize,

    /// Most people in a file; the next is closed with 4031.
    #[arg(long, env = "ATRIUM_ROOM_PEOPLE", default_value_t = 500)]
    pub room_people: usize,

    /// Messages a second per socket, presence aside; beyond it they wait in
    /// order (429 notice), and over five seconds' worth waiting closes 4013.
    #[arg(long, env = "ATRIUM_WS_PER_SECOND", default_value_t = 60)]
    pub ws_per_second: u32,

    /// Bytes a second a socket's messages may bring in, counted after inflation
    /// (a full bucket holds one largest message); reading pauses while over it.
    #[arg(long, env = "ATRIUM_WS_BYTES_PER_SECOND", default_value_t = 1024 * 1024)]
    pub ws_bytes_per_second: usize,

    /// Bytes a second the sockets of one client address (an IPv6 client by its /64) may
    /// bring in together, counted after inflation: past it, each of them stops reading
    /// until the address's debt is paid (as over `ATRIUM_WS_BYTES_PER_SECOND`). Without
    /// it, an address's hundred sockets could make the node parse 100 MiB a second.
    /// `0` turns it off.
    #[arg(
        long,
        env = "ATRIUM_WS_BYTES_PER_IP_PER_SECOND",
        default_value_t = 8 * 1024 * 1024
    )]
    pub ws_bytes_per_ip_per_second: u64,

    /// Bytes the sockets of one client address may bring in at once before the rate
    /// above paces them.
    #[arg(
        long,
        env = "ATRIUM_WS_BURST_BYTES_PER_IP",
        default_value_t = 32 * 1024 * 1024
    )]
    pub ws_burst_bytes_per_ip: u64,

    /// Bytes of messages a socket may have waiting for its message rate; at this
    /// bound the node stops reading the socket until they drain.
    #[arg(long, env = "ATRIUM_WS_BACKLOG_BYTES", default_value_t = 1024 * 1024)]
    pub ws_backlog_bytes: usize,

    /// Largest message before a socket's hello (the hello is small; a bigger one closes 1009).
    #[arg(long, env = "ATRIUM_HELLO_MAX_BYTES", default_value_t = 16 * 1024)]
    pub hello_max_bytes: usize,

    /// Joins (a hello until its welcome) the node works on at once; more wait their
    /// turn, so a storm of joins is taken at the pace the node can carry.
    #[arg(long, env = "ATRIUM_JOINS_IN_FLIGHT", default_value_t = 256)]
    pub joins_in_flight: usize,

    /// How long a join may wait for its turn before it is told to come back later
    /// (close 1013 with a jittered `retry-ms` hint).
    #[arg(long, env = "ATRIUM_JOIN_WAIT_MS", default_value_t = 5_000)]
    pub join_wait_ms: u64,

    /// How much a socket's compressed messages may inflate, in all: at most this
    /// many bytes of text per byte received, plus 64 KiB; beyond it, close 1009.
    #[arg(long, env = "ATRIUM_WS_INFLATE_RATIO", default_value_t = 16)]
    pub ws_inflate_ratio: usize,

    /// Origins (`https://app.example.com`) whose pages may open sockets, comma
    /// separated; empty allows any. Requests without an `Origin` header (not from
    /// a browser) are not affected.
    #[arg(long, env = "ATRIUM_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// Memory the node may use (bytes, or with K, M, G); new sockets, rooms and
    /// large requests are refused a tenth (at least 16 MiB) below it. `auto` (the default): 75% of the
    /// container's memory limit, or of the machine's memory.
    #[arg(long, env = "ATRIUM_MEMORY_BUDGET", default_value = "auto", value_parser = crate::memory::parse_size)]
    pub memory_budget: u64,

    /// Memory the open rooms of one account's files may take together, and so may the
    /// rooms opened by the joins of one client address (by a load's estimate). A room opens
    /// whatever its size while its address holds none; an account's largest room is not
    /// counted against its share; past the share, a join that would open another closes
    /// 1013. `auto` (the default): an eighth of the memory
    /// budget; `off`: no share. The app's own account has none.
    #[arg(long, env = "ATRIUM_ROOM_MEMORY_SHARE", default_value = "auto", value_parser = crate::room::shares::parse_share)]
    pub room_memory_share: u64,

    /// Presence messages a second per socket; beyond it they are dropped.
    #[arg(long, env = "ATRIUM_PRESENCE_PER_SECOND", default_value_t = 80)]
    pub presence_per_second: u32,

    /// Sockets per account (fleet-wide through the coordinator); the next gets 4029.
    #[arg(long, env = "ATRIUM_WS_PER_ACCOUNT", default_value_t = 10)]
    pub ws_per_account: u64,

    /// Sockets per client address; the next gets 4029.
    #[arg(long, env = "ATRIUM_WS_PER_IP", default_value_t = 100)]
    pub ws_per_ip: usize,

    /// Socket upgrades a second per client address; more wait their turn (up to 10 s,
    /// then 429) instead of being refused, so a reconnect loop costs the node little.
    #[arg(
        long,
        env = "ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND",
        default_value_t = 50
    )]
    pub ws_upgrades_per_ip_per_second: u32,

    /// HTTP requests a second per client address (an IPv6 client by its /64), with a
    /// burst of `ATRIUM_REQUEST_BURST_PER_IP`; beyond it 429. Socket upgrades are paced
    /// by their own limit, and requests with an API key per key (an upgrade that is not
    /// upgraded and a key that is not accepted count here). `0` turns it off.
    #[arg(long, env = "ATRIUM_REQUESTS_PER_IP_PER_SECOND", default_value_t = 200)]
    pub requests_per_ip_per_second: u32,

    /// HTTP requests one client address may send at once before the rate above paces it.
    #[arg(long, env = "ATRIUM_REQUEST_BURST_PER_IP", default_value_t = 2000)]
    pub request_burst_per_ip: u32,

    /// Socket upgrades one client address may make at once before they are paced.
    #[arg(long, env = "ATRIUM_WS_UPGRADE_BURST", default_value_t = 200)]
    pub ws_upgrade_burst: u32,

    /// Addresses of proxies (routers) whose `X-Forwarded-For` is believed, comma separated.
    #[arg(long, env = "ATRIUM_TRUST_PROXY", value_delimiter = ',')]
    pub trust_proxy: Vec<String>,

    /// Sign-ups and sign-ins a minute per client address (429 beyond).
    #[arg(long, env = "ATRIUM_AUTH_PER_IP_PER_MINUTE", default_value_t = 20)]
    pub auth_per_ip_per_minute: u32,

    /// Sign-ups and sign-ins a minute per email (429 beyond).
    #[arg(long, env = "ATRIUM_AUTH_PER_EMAIL_PER_MINUTE", default_value_t = 10)]
    pub auth_per_email_per_minute: u32,

    /// Most files one account may own; a creation past it is refused (403
    /// `too-many-files`).
    #[arg(long, env = "ATRIUM_FILES_PER_ACCOUNT", default_value_t = 1_000)]
    pub files_per_account: u64,

    /// Most bytes one account's files may keep in the store (documents, their logs and
    /// versions); `0` turns the limit off. At it: 403 `storage-full` for creations,
    /// named versions and restores, `too-large` for patches that grow a document.
    #[arg(long, env = "ATRIUM_STORAGE_PER_ACCOUNT", default_value = "1GiB", value_parser = crate::storage::parse_limit)]
    pub storage_per_account: u64,

    /// File creations a minute per account, with a burst of as many (429 beyond).
    #[arg(long, env = "ATRIUM_FILE_CREATES_PER_MINUTE", default_value_t = 30)]
    pub file_creates_per_minute: u32,

    /// Versions named or renamed a minute per file, with a burst of as many (429
    /// beyond): named versions are kept until the owner deletes them, a rename reaches
    /// everyone in the file, and anyone with edit access may do either.
    #[arg(long, env = "ATRIUM_VERSIONS_NAMED_PER_MINUTE", default_value_t = 10)]
    pub versions_named_per_minute: u32,

    /// Restores a minute per file, with a burst of as many (429 beyond): each makes a
    /// version that is kept for a day and sends the whole difference to everyone in the
    /// file, and anyone with edit access may restore.
    #[arg(long, env = "ATRIUM_RESTORES_PER_MINUTE", default_value_t = 4)]
    pub restores_per_minute: u32,

    /// Changes of a file's settings (`PATCH /api/files/{id}`, new keys) a minute per file,
    /// with a burst of as many (429 beyond): each reaches everyone in the file.
    #[arg(long, env = "ATRIUM_FILE_CHANGES_PER_MINUTE", default_value_t = 30)]
    pub file_changes_per_minute: u32,

    /// Bytes of documents sent a second to one client address (an IPv6 client by its
    /// /64): welcomes that carry the document, `GET /api/files/{id}/doc` and version
    /// reads. One document of any size goes while the address owes nothing; past its
    /// share a hello closes 1013 with `retry-ms`, a download is 429. `0` turns it off.
    #[arg(
        long,
        env = "ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND",
        default_value_t = 8 * 1024 * 1024
    )]
    pub document_bytes_per_ip_per_second: u64,

    /// Bytes of documents one client address may be sent at once before the rate above
    /// paces it.
    #[arg(
        long,
        env = "ATRIUM_DOCUMENT_BURST_BYTES_PER_IP",
        default_value_t = 256 * 1024 * 1024
    )]
    pub document_burst_bytes_per_ip: u64,

    /// How long a session (a sign-in's token) works; past it the token answers
    /// 401 everywhere and its open sockets close with 4001. Default 30 days.
    #[arg(long, env = "ATRIUM_SESSION_TTL_MS", default_value_t = 30 * 24 * 3_600_000)]
    pub session_ttl_ms: u64,

    /// Most sessions one account keeps: a sign-in past it ends the account's oldest
    /// (its token answers 401, its sockets close 4001), so signing in in a loop does not
    /// fill the store. `0` turns it off.
    #[arg(long, env = "ATRIUM_SESSIONS_PER_ACCOUNT", default_value_t = 100)]
    pub sessions_per_account: u64,

    /// How long a request body may take to arrive in full, from the end of its
    /// headers; past it the answer is 408 `timeout` and the connection closes.
    #[arg(long, env = "ATRIUM_BODY_TIMEOUT_MS", default_value_t = 10_000)]
    pub body_timeout_ms: u64,

    /// Most TCP connections open at once on the main address (HTTP and sockets
    /// together); more are answered 503 and closed. Default: the open-file limit
    /// of the process less 256 (for the store, the coordinator and the rest).
    #[arg(long, env = "ATRIUM_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// Most TCP connections open at once from one client address (an IPv6 client
    /// by its /64); more are answered 429 and closed. Trusted proxies
    /// (`ATRIUM_TRUST_PROXY`) are not counted. Default: `ATRIUM_WS_PER_IP` plus 64
    /// for HTTP; `0` turns the cap off.
    #[arg(long, env = "ATRIUM_CONNECTIONS_PER_IP")]
    pub connections_per_ip: Option<usize>,

    /// The kernel's send buffer of each connection on the main address, in bytes (Linux
    /// doubles it), so a peer that reads nothing holds at most that much of the
    /// machine's memory; what it has not taken then waits in the node's send queues,
    /// counted against the memory budget. `0` (the default) leaves the kernel's own
    /// sizing (up to `tcp_wmem`, 4 MiB).
    #[arg(long, env = "ATRIUM_SEND_BUFFER_BYTES", default_value_t = 0)]
    pub send_buffer_bytes: usize,

    /// The most bytes of a connection on the main address the kernel holds unsent
    /// (`TCP_NOTSENT_LOWAT`): a peer that reads nothing then holds about that much of the
    /// machine's memory, not up to `tcp_wmem`'s 4 MiB; bytes in flight to a distant reader
    /// are not limited. At least 16 KiB; `0` leaves the kernel's own limit.
    #[arg(long, env = "ATRIUM_KERNEL_UNSENT_BYTES", default_value_t = 131_072)]
    pub kernel_unsent_bytes: usize,

    /// An HTTP answer whose client takes none of its bytes for this long has its
    /// connection closed, so asking and never reading holds nothing for good.
    #[arg(long, env = "ATRIUM_WRITE_TIMEOUT_MS", default_value_t = 30_000)]
    pub write_timeout_ms: u64,

    /// Interval between pings on a socket (each jittered by ±25%).
    #[arg(long, env = "ATRIUM_PING_MS", default_value_t = 20_000)]
    pub ping_ms: u64,

    /// A socket that sends nothing (not even a pong) for this long is closed.
    #[arg(long, env = "ATRIUM_PING_TIMEOUT_MS", default_value_t = 45_000)]
    pub ping_timeout_ms: u64,

    /// Whether people may sign up and sign in with a password on this node. Off for an app
    /// whose people all come with app tokens: then no password is ever hashed here, and a
    /// flood of sign-ins costs a lookup of a setting, not a core.
    #[arg(
        long,
        env = "ATRIUM_PASSWORD_ACCOUNTS",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub password_accounts: bool,

    /// Include statistics in /health for everyone (else only for server admins).
    #[arg(
        long,
        env = "ATRIUM_HEALTH_STATS",
        default_value_t = false,
        action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub health_stats: bool,

    /// Largest message a client may send (bytes); larger closes with 1009.
    #[arg(long, env = "ATRIUM_MAX_MESSAGE_BYTES", default_value_t = 1024 * 1024)]
    pub max_message_bytes: usize,

    /// Most ops in one patch (more: reject `too-large`).
    #[arg(long, env = "ATRIUM_MAX_PATCH_OPS", default_value_t = 1000)]
    pub max_patch_ops: usize,

    /// Largest document, serialized (bytes).
    #[arg(long, env = "ATRIUM_MAX_DOC_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_doc_bytes: usize,

    /// A snapshot is written at least this often while a file changes.
    #[arg(long, env = "ATRIUM_SNAPSHOT_MS", default_value_t = 60_000)]
    pub snapshot_ms: u64,

    /// A snapshot is written once the log behind the last one passes
    /// max(this, a quarter of the document).
    #[arg(long, env = "ATRIUM_SNAPSHOT_BYTES", default_value_t = 1024 * 1024)]
    pub snapshot_bytes: usize,

    /// A file being edited gets an automatic version (a checkpoint) at least this often;
    /// a room that closes after edits saves one too.
    #[arg(long, env = "ATRIUM_CHECKPOINT_MS", default_value_t = 600_000)]
    pub checkpoint_ms: u64,

    /// A version stores the whole document (compressed) at least every this many
    /// versions; the others store only what changed.
    #[arg(long, env = "ATRIUM_HISTORY_BASE_EVERY", default_value_t = 32)]
    pub history_base_every: u64,

    /// Every automatic version younger than this is kept.
    #[arg(long, env = "ATRIUM_HISTORY_ALL_MS", default_value_t = 86_400_000)]
    pub history_all_ms: u64,

    /// Automatic versions up to this age are thinned to one an hour.
    #[arg(long, env = "ATRIUM_HISTORY_HOURLY_MS", default_value_t = 604_800_000)]
    pub history_hourly_ms: u64,

    /// Automatic versions up to this age are thinned to one a day; older ones are dropped
    /// (named versions are kept until deleted).
    #[arg(long, env = "ATRIUM_HISTORY_DAILY_MS", default_value_t = 2_592_000_000)]
    pub history_daily_ms: u64,

    /// Restores of one file that may wait behind the one being prepared (each holds a
    /// version's document); more are answered 503.
    #[arg(long, env = "ATRIUM_RESTORES_WAITING", default_value_t = 4)]
    pub restores_waiting: usize,

    /// Frames a socket's send queue may hold before the socket is closed (4008).
    #[arg(long, env = "ATRIUM_SEND_QUEUE", default_value_t = 1024)]
    pub send_queue: usize,

    /// Bytes a socket's send queue may hold before the socket is closed (4008).
    #[arg(long, env = "ATRIUM_SEND_QUEUE_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub send_queue_bytes: usize,

    /// Node-wide bytes for messages larger than half a send queue, held until written
    /// (over it, 1013); at most a quarter of the memory budget, but never less than the
    /// largest document's welcome.
    #[arg(long, env = "ATRIUM_WELCOME_BUDGET_BYTES", default_value_t = 256 * 1024 * 1024)]
    pub welcome_budget_bytes: usize,

    /// How long shutdown may take before the process exits anyway.
    #[arg(long, env = "ATRIUM_SHUTDOWN_MS", default_value_t = 10_000)]
    pub shutdown_ms: u64,

    /// Password hashes computed at once, node-wide; more wait briefly, then get 503.
    /// Default: half the cores, at least one, so a flood of sign-ins or sign-ups
    /// never takes more than half the node's CPU from relaying.
    #[arg(long, env = "ATRIUM_HASH_CONCURRENCY")]
    pub hash_concurrency: Option<usize>,

    /// Argon2id memory cost in KiB.
    #[arg(long, env = "ATRIUM_ARGON2_MEMORY_KIB", default_value_t = 19_456)]
    pub argon2_memory_kib: u32,

    /// Argon2id iterations.
    #[arg(long, env = "ATRIUM_ARGON2_ITERATIONS", default_value_t = 2)]
    pub argon2_iterations: u32,

    /// App tokens (docs/auth.md): the `iss` they must carry. Required with any key below.
    #[arg(long, env = "ATRIUM_APP_TOKEN_ISSUER", default_value = "")]
    pub app_token_issuer: String,

    /// App tokens: the `aud` they must carry. Required with any key below.
    #[arg(long, env = "ATRIUM_APP_TOKEN_AUDIENCE", default_value = "")]
    pub app_token_audience: String,

    /// App tokens: the HMAC secret of HS256 tokens (at least 32 bytes).
    #[arg(long, env = "ATRIUM_APP_TOKEN_HS256_SECRET", hide_env_values = true)]
    pub app_token_hs256_secret: Option<String>,

    /// App tokens: files of PEM public keys, comma separated; each key's type names its
    /// algorithm (RSA: RS256, EC P-256: ES256, Ed25519: EdDSA).
    #[arg(long, env = "ATRIUM_APP_TOKEN_PUBLIC_KEYS", value_delimiter = ',')]
    pub app_token_public_keys: Vec<PathBuf>,

    /// App tokens: a JWKS URL (https, or http on loopback) of the app's public keys.
    #[arg(long, env = "ATRIUM_APP_TOKEN_JWKS_URL")]
    pub app_token_jwks_url: Option<String>,

    /// App tokens: how often the JWKS is fetched again.
    #[arg(
        long,
        env = "ATRIUM_APP_TOKEN_JWKS_REFRESH_MS",
        default_value_t = 300_000
    )]
    pub app_token_jwks_refresh_ms: u64,

    /// App tokens: a token with a `kid` the cache lacks fetches the JWKS again, at most
    /// once in this long.
    #[arg(
        long,
        env = "ATRIUM_APP_TOKEN_JWKS_MIN_REFETCH_MS",
        default_value_t = 60_000
    )]
    pub app_token_jwks_min_refetch_ms: u64,

    /// App tokens: how long a key that left the JWKS still verifies tokens.
    #[arg(
        long,
        env = "ATRIUM_APP_TOKEN_JWKS_KEEP_MS",
        default_value_t = 3_600_000
    )]
    pub app_token_jwks_keep_ms: u64,

    /// App tokens: clock skew allowed for `nbf` and `iat` (seconds). `exp` is strict.
    #[arg(long, env = "ATRIUM_APP_TOKEN_SKEW_S", default_value_t = 30)]
    pub app_token_skew_s: u64,

    /// App tokens: how long before `exp` a socket is sent the expiry notice.
    #[arg(long, env = "ATRIUM_APP_TOKEN_NOTICE_MS", default_value_t = 30_000)]
    pub app_token_notice_ms: u64,

    /// App tokens: how long a revocation is remembered (longer than tokens live).
    #[arg(long, env = "ATRIUM_APP_TOKEN_REVOCATION_TTL_MS", default_value_t = 24 * 3_600_000)]
    pub app_token_revocation_ttl_ms: u64,

    /// Server API: requests a second per API key (with a burst of as many); beyond it 429.
    #[arg(long, env = "ATRIUM_SERVER_API_PER_SECOND", default_value_t = 50)]
    pub server_api_per_second: u32,

    /// Server API: patch op ids each room keeps in memory to answer retries at once
    /// (older ones are answered from the store).
    #[arg(long, env = "ATRIUM_SERVER_OPS_KEPT", default_value_t = 1_000)]
    pub server_ops_kept: usize,

    /// Server API: how long a patch's op id is recognised (a retry within it gets the first
    /// answer, across restarts and failovers); the store forgets older ones.
    #[arg(long, env = "ATRIUM_SERVER_OP_TTL_MS", default_value_t = 24 * 3_600_000)]
    pub server_op_ttl_ms: u64,

    /// Largest `data` of a broadcast event, in bytes of JSON (socket and server API).
    #[arg(long, env = "ATRIUM_EVENT_MAX_BYTES", default_value_t = 4096)]
    pub event_max_bytes: usize,

    /// Events a second a socket may send; beyond it they are dropped (as presence is).
    #[arg(long, env = "ATRIUM_EVENTS_PER_SECOND", default_value_t = 20)]
    pub events_per_second: u32,

    /// Bytes of `data` a second a room relays from its sockets' events, all senders
    /// together (a burst of as many); beyond it events are dropped. It bounds what one
    /// viewer's events cost the node in bytes sent: this times the people in the room.
    #[arg(long, env = "ATRIUM_ROOM_EVENT_BYTES_PER_SECOND", default_value_t = 64 * 1024)]
    pub room_event_bytes_per_second: usize,

    /// Most files one `DELETE /api/server/files?prefix=` removes; the answer says whether
    /// more are left.
    #[arg(long, env = "ATRIUM_PREFIX_DELETE_MAX", default_value_t = 100)]
    pub prefix_delete_max: usize,

    /// How often this node reports its open rooms and their sizes to the coordinator (for
    /// `GET /api/server/rooms`); a report that changed nothing is written again only every
    /// 20 s.
    #[arg(long, env = "ATRIUM_ROOM_REPORT_MS", default_value_t = 2_000)]
    pub room_report_ms: u64,
    /// Webhooks (docs/webhooks.md): a `file.updated` is sent at most once per file and
    /// endpoint in this long, carrying the latest version.
    #[arg(long, env = "ATRIUM_WEBHOOK_DEBOUNCE_MS", default_value_t = 1_000)]
    pub webhook_debounce_ms: u64,

    /// Webhooks: the first retry's delay; each next one doubles it (with jitter).
    #[arg(long, env = "ATRIUM_WEBHOOK_RETRY_BASE_MS", default_value_t = 5_000)]
    pub webhook_retry_base_ms: u64,

    /// Webhooks: the longest delay between two tries.
    #[arg(long, env = "ATRIUM_WEBHOOK_RETRY_MAX_MS", default_value_t = 3_600_000)]
    pub webhook_retry_max_ms: u64,

    /// Webhooks: how long after its event a message is still retried; then it is failed.
    #[arg(long, env = "ATRIUM_WEBHOOK_RETRY_FOR_MS", default_value_t = 24 * 3_600_000)]
    pub webhook_retry_for_ms: u64,

    /// Webhooks: how long one request may take (connect, send, answer).
    #[arg(long, env = "ATRIUM_WEBHOOK_TIMEOUT_MS", default_value_t = 10_000)]
    pub webhook_timeout_ms: u64,

    /// Webhooks: requests in flight at once from this node, over every endpoint.
    #[arg(long, env = "ATRIUM_WEBHOOK_CONCURRENCY", default_value_t = 32)]
    pub webhook_concurrency: usize,

    /// Webhooks: requests in flight at once to one endpoint.
    #[arg(long, env = "ATRIUM_WEBHOOK_PER_ENDPOINT", default_value_t = 8)]
    pub webhook_per_endpoint: usize,

    /// Webhooks: messages kept per endpoint (waiting and failed); beyond it the oldest
    /// are dropped.
    #[arg(long, env = "ATRIUM_WEBHOOK_MAX_QUEUED", default_value_t = 10_000)]
    pub webhook_max_queued: u64,

    /// Webhooks: `person.joined` and `person.left` events one room records a minute at most
    /// (as a burst too), each client address a quarter of them; beyond it they are dropped
    /// and counted, so a guest reconnecting in a loop through a public link cannot fill the
    /// outbox, nor keep the others' comings and goings from being told.
    #[arg(
        long,
        env = "ATRIUM_WEBHOOK_PERSON_EVENTS_PER_MINUTE",
        default_value_t = 600
    )]
    pub webhook_person_events_per_minute: u32,

    /// Webhooks: endpoints at most (each a URL the node will call).
    #[arg(long, env = "ATRIUM_WEBHOOK_MAX_ENDPOINTS", default_value_t = 100)]
    pub webhook_max_endpoints: u64,

    /// Webhooks: refuse to call private, loopback, link-local and other non-public
    /// addresses (checked on the resolved address at connect time).
    #[arg(
        long,
        env = "ATRIUM_WEBHOOK_BLOCK_PRIVATE",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub webhook_block_private: bool,

    /// Webhooks: a static endpoint from settings, besides those made through the API
    /// (`URL`, with `ATRIUM_WEBHOOK_SECRET` and `ATRIUM_WEBHOOK_EVENTS`).
    #[arg(long, env = "ATRIUM_WEBHOOK_URL")]
    pub webhook_url: Option<String>,

    /// Webhooks: the static endpoint's secret (`whsec_<base64>`).
    #[arg(long, env = "ATRIUM_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,

    /// Webhooks: the static endpoint's events, comma separated (empty: all).
    #[arg(long, env = "ATRIUM_WEBHOOK_EVENTS", value_delimiter = ',')]
    pub webhook_events: Vec<String>,
}

mod derived;

#[cfg(test)]
mod tests;
