//! Every metric of the node: its name, its help text and its labels.

use prometheus::Registry;

use super::{counter, counter_vec, gauge, histogram, Metrics, LATENCY};

impl Metrics {
    pub(crate) fn unshared() -> Self {
        let r = Registry::new();
        Metrics {
            connections: gauge(&r, "atrium_connections", "Open sockets."),
            rooms: gauge(&r, "atrium_rooms", "Rooms in memory."),
            ring_members: gauge(
                &r,
                "atrium_ring_members",
                "Nodes this node sees taking new work (live, not draining): its ring of files.",
            ),
            people: gauge(&r, "atrium_people", "People in rooms (sockets past hello)."),
            editors: gauge(
                &r,
                "atrium_editors",
                "People in rooms holding an editor seat.",
            ),
            messages_received: counter_vec(
                &r,
                "atrium_messages_received_total",
                "Socket messages received, by type.",
                &["type"],
            ),
            messages_sent: counter_vec(
                &r,
                "atrium_messages_sent_total",
                "Socket messages sent, by type (a room message counts once per socket).",
                &["type"],
            ),
            bytes_received: counter(
                &r,
                "atrium_received_bytes_total",
                "Socket payload bytes received.",
            ),
            bytes_sent: counter(
                &r,
                "atrium_sent_bytes_total",
                "Bytes written to sockets (frames with their headers).",
            ),
            patches_acked: counter(
                &r,
                "atrium_patches_acked_total",
                "Patches made durable and acked.",
            ),
            rejects: counter_vec(
                &r,
                "atrium_rejects_total",
                "Rejected messages, by code.",
                &["code"],
            ),
            closes: counter_vec(
                &r,
                "atrium_closes_total",
                "Sockets closed by the node, by close code.",
                &["code"],
            ),
            room_exits: counter_vec(
                &r,
                "atrium_room_exits_total",
                "Rooms that ended, by reason: idle, shutdown, moved (handed to a new ring owner), \
                 deleted, lease-lost (the coordinator lease lapsed or was taken), fenced (a store \
                 write refused by the epoch fence).",
                &["reason"],
            ),
            patch_durable_seconds: histogram(
                &r,
                "atrium_patch_durable_seconds",
                "From a patch being applied in memory to it being synced to disk.",
                LATENCY,
            ),
            journal_batches: counter(
                &r,
                "atrium_journal_commits_total",
                "Group commits of the op log.",
            ),
            journal_commit_seconds: histogram(
                &r,
                "atrium_journal_commit_seconds",
                "Duration of one group commit (one transaction and one sync).",
                LATENCY,
            ),
            snapshots: counter(&r, "atrium_snapshots_total", "Snapshots written."),
            rate_limited: counter(
                &r,
                "atrium_rate_limited_total",
                "Times a socket went over its message rate (each answered with a 429 notice).",
            ),
            documents_paced: counter_vec(
                &r,
                "atrium_documents_paced_total",
                "Welcomes (1013) and document reads (429) refused while their address was over its share of document bytes (ATRIUM_DOCUMENT_BYTES_PER_IP_PER_SECOND), by way.",
                &["via"],
            ),
            requests_paced: counter(
                &r,
                "atrium_requests_paced_total",
                "HTTP requests that waited their address's turn (ATRIUM_REQUESTS_PER_IP_PER_SECOND); those refused count in atrium_rate_limited_total.",
            ),
            memory_rss: gauge(
                &r,
                "atrium_memory_resident_bytes",
                "Resident memory of the node, as its memory budget last sampled it.",
            ),
            memory_budget: gauge(
                &r,
                "atrium_memory_budget_bytes",
                "The node's memory budget (ATRIUM_MEMORY_BUDGET); new work is refused a tenth (at least 16 MiB) below it.",
            ),
            memory_promised: gauge(
                &r,
                "atrium_memory_promised_bytes",
                "Bytes of the memory budget promised and not yet given back (work under way: rooms loading, uploads, large patches, saves, welcomes, version history work; and whole documents held until their readers take them), as last sampled.",
            ),
            lane_runs: counter(
                &r,
                "atrium_lane_runs_total",
                "Pieces of work on large documents run on the bulk lane (off the runtime's workers).",
            ),
            upgrades_paced: counter(
                &r,
                "atrium_ws_upgrades_paced_total",
                "Socket upgrades that waited their address's turn (ATRIUM_WS_UPGRADES_PER_IP_PER_SECOND).",
            ),
            memory_refusals: counter(
                &r,
                "atrium_memory_refusals_total",
                "Connections, sockets, rooms and requests refused because the node was at its memory budget.",
            ),
            storage_refusals: counter_vec(
                &r,
                "atrium_storage_refusals_total",
                "Creations, named versions, restores and growing patches refused, and automatic versions put off, because the file's owner was at ATRIUM_STORAGE_PER_ACCOUNT, by what.",
                &["what"],
            ),
            inbound_paused: counter(
                &r,
                "atrium_inbound_paused_total",
                "Times a socket's reading paused because its waiting messages or bytes (its own, or its address's) were at their bound.",
            ),
            joins: counter_vec(
                &r,
                "atrium_joins_total",
                "Hellos by outcome: admitted (welcomed), deferred (closed with a code that asks \
                 the client to come back, e.g. 1013 with a retry hint), refused (a code that \
                 tells it to stop).",
                &["outcome"],
            ),
            welcomes_waited: counter(
                &r,
                "atrium_welcomes_waited_total",
                "Welcomes held until the patches the room had accepted before the join were durable.",
            ),
            presence_dropped: counter(
                &r,
                "atrium_presence_dropped_total",
                "Presence messages dropped for exceeding the per-socket presence rate.",
            ),
            queue_overflows: counter(
                &r,
                "atrium_queue_overflows_total",
                "Sockets closed with 4008 because their send queue overflowed.",
            ),
            presence_tick_seconds: histogram(
                &r,
                "atrium_presence_tick_seconds",
                "Time from the start of a room's presence tick to its last slice.",
                LATENCY,
            ),
            snapshot_seconds: histogram(
                &r,
                "atrium_snapshot_seconds",
                "Duration of a snapshot write.",
                LATENCY,
            ),
            coordinator_operations: counter_vec(
                &r,
                "atrium_coordinator_operations_total",
                "Calls to the coordinator, by operation.",
                &["operation"],
            ),
            http_requests: counter_vec(
                &r,
                "atrium_http_requests_total",
                "HTTP requests answered, by status class.",
                &["status"],
            ),
            tcp_connections: gauge(
                &r,
                "atrium_tcp_connections",
                "Open TCP connections on the main address (HTTP and sockets).",
            ),
            connections_refused: counter(
                &r,
                "atrium_connections_refused_total",
                "Connections refused at ATRIUM_MAX_CONNECTIONS (answered 503 or closed).",
            ),
            body_timeouts: counter(
                &r,
                "atrium_body_timeouts_total",
                "Requests whose body did not arrive within ATRIUM_BODY_TIMEOUT_MS (408).",
            ),
            server_patches: counter_vec(
                &r,
                "atrium_server_patches_total",
                "Patches from the server API, by outcome: applied, replayed (a retry answered \
                 with its first answer), refused.",
                &["outcome"],
            ),
            kicks: counter(
                &r,
                "atrium_kicks_total",
                "Sockets closed with 4006 by the server API's kick.",
            ),
            events_dropped: counter(
                &r,
                "atrium_events_dropped_total",
                "Socket `event` messages dropped for exceeding the per-socket event rate.",
            ),
            webhooks: super::WebhookMetrics::register(&r),
            registry: r,
        }
        .with_every_label_at_zero()
    }
}
