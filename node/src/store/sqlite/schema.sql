-- The embedded store's schema. Applied at start; every statement is idempotent.

CREATE TABLE IF NOT EXISTS accounts (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL,
    -- The email lowercased: emails are unique and matched without regard to case.
    email_key     TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);

-- Session tokens are kept only as SHA-256 digests. A session works until
-- `expires_at`; stores made before it existed gain it in SqliteStore::open.
CREATE TABLE IF NOT EXISTS sessions (
    token_digest BLOB PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL DEFAULT 0
);

-- `epoch` fences writers (raised by every takeover); `version` is the last durable one.
CREATE TABLE IF NOT EXISTS files (
    id             TEXT PRIMARY KEY,
    owner          TEXT NOT NULL REFERENCES accounts(id),
    name           TEXT NOT NULL,
    link           TEXT NOT NULL,
    view_key       TEXT NOT NULL,
    edit_key       TEXT NOT NULL,
    key_generation INTEGER NOT NULL DEFAULT 0,
    epoch          INTEGER NOT NULL DEFAULT 0,
    version        INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    -- 1 when viewers may list and read the file's versions.
    viewers_see_history INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS files_by_owner ON files(owner, updated_at);

-- The highest epoch a deleted file had. A file made later starts above it, since an id may
-- be made again (the server API chooses ids): a room or a snapshot job of the deleted file
-- that is still finishing can never pass the new file's fence.
CREATE TABLE IF NOT EXISTS epoch_floor (
    one   INTEGER PRIMARY KEY CHECK (one = 1),
    epoch INTEGER NOT NULL
);
INSERT OR IGNORE INTO epoch_floor (one, epoch) VALUES (1, 0);

-- One snapshot per file: the latest. A document over 64 KiB is kept in `document_parts`
-- under the id in `parts` (and `doc` holds a marker that is not JSON); stores made before
-- parts gain the column in SqliteStore::open.
CREATE TABLE IF NOT EXISTS snapshots (
    file_id TEXT PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    doc     TEXT NOT NULL,
    parts   INTEGER
);

-- Large documents in parts of 64 KiB, each written in a commit of its own, so the
-- journal's commits go between them instead of waiting for a whole megabyte's write
-- and sync (node/src/store/sqlite/parts.rs). A row of `snapshots` names them once all
-- are written; parts no row names are removed at start.
CREATE TABLE IF NOT EXISTS document_parts (
    document INTEGER NOT NULL,
    part     INTEGER NOT NULL,
    bytes    BLOB NOT NULL,
    PRIMARY KEY (document, part)
);

-- The op log: one row per accepted patch.
--
-- Tables whose rows can be large (a patch, a version's document) keep a rowid: their
-- key is then an index of small entries beside the rows. Without one, the rows are the
-- key, and finding any key compares it with whole rows, a large row read in full from
-- its overflow pages at each step: one person's 256 KB patches made every other
-- file's appends cost 0.6 ms of CPU each (docs/reliability.md).
CREATE TABLE IF NOT EXISTS ops (
    file_id TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    client  BLOB NOT NULL,
    op_id   INTEGER NOT NULL,
    by      TEXT NOT NULL,
    ops     TEXT NOT NULL,
    t       TEXT,
    PRIMARY KEY (file_id, version)
);

-- The highest op id accepted from each client in each file (dedupe of resends).
CREATE TABLE IF NOT EXISTS client_ops (
    file_id TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    client  BLOB NOT NULL,
    op_id   INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (file_id, client)
) WITHOUT ROWID;

-- Version history (node/src/history): one row per version, holding either a base (the
-- whole document, deflate-compressed) or a delta against the row before it. `id` grows by
-- one per saved version of the file and is never reused.
CREATE TABLE IF NOT EXISTS versions (
    file_id       TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    id            INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    title         TEXT,
    description   TEXT,
    -- JSON array of names.
    editors       TEXT NOT NULL,
    restored_from INTEGER,
    -- The document's size as the document limits count it (NULL: saved before it was kept).
    doc_bytes     INTEGER,
    base          BLOB,
    delta         BLOB,
    PRIMARY KEY (file_id, id)
);

-- The next id of each file's versions (ids are never reused, even after a drop).
CREATE TABLE IF NOT EXISTS version_ids (
    file_id TEXT PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    next_id INTEGER NOT NULL
);

-- API keys of the app's backend, kept only as SHA-256 digests of the key.
CREATE TABLE IF NOT EXISTS api_keys (
    id         TEXT PRIMARY KEY,
    key_digest BLOB NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

-- Revoked app-token subjects (`sub`) and token ids (`jti`), each until `until_ms`.
CREATE TABLE IF NOT EXISTS revocations (
    kind     TEXT NOT NULL,
    value    TEXT NOT NULL,
    at_s     INTEGER NOT NULL,
    until_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, value)
);

-- Webhook endpoints (docs/webhooks.md). `events` is `,type,type,` so one LIKE finds a type.
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    id          TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    events      TEXT NOT NULL,
    enabled     INTEGER NOT NULL,
    description TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

-- The webhook outbox: one row per (endpoint, event), deleted once delivered. `state` is 0
-- while waiting, 1 once failed (kept until the trim forgets it). `seq` grows when a
-- waiting `file.updated` is updated in place (the debounce). No reference to `files`: a
-- deleted file's last events are still sent.
CREATE TABLE IF NOT EXISTS webhook_outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    file_id     TEXT NOT NULL,
    kind        TEXT NOT NULL,
    msg_id      TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    next_at     INTEGER NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    seq         INTEGER NOT NULL DEFAULT 0,
    state       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS webhook_outbox_queue
    ON webhook_outbox(endpoint_id, file_id, state, created_at, id);
CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox(state, next_at);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_outbox_debounce
    ON webhook_outbox(endpoint_id, file_id) WHERE kind = 'file.updated' AND state = 0;
