-- Atrium's Postgres store, version 1: accounts, sessions, files, snapshots and the op log.
--
-- Applied by PgStore::connect inside one transaction, under an advisory lock, and
-- recorded in schema_migrations. Never edit a migration that has shipped: add the
-- next numbered file instead.
--
-- Times are Unix milliseconds (BIGINT), as the embedded store keeps them. Versions,
-- epochs and op ids are BIGINT (the node's u64 values never reach 2^63).

CREATE TABLE accounts (
    id            TEXT PRIMARY KEY,
    -- The email as the person typed it, shown back to them.
    email         TEXT NOT NULL,
    -- The email lowercased (by the node): the unique key, matched without regard to case.
    email_key     TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);

-- Only the SHA-256 digest of a session token is kept.
CREATE TABLE sessions (
    token_digest BYTEA PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at   BIGINT NOT NULL
);
CREATE INDEX sessions_by_account ON sessions (account_id);

-- `epoch` fences writers: every takeover raises it before reading anything, and every
-- append, snapshot and trim names the epoch it was taken under. `version` is the last
-- durable version; appends move it forward without gaps.
CREATE TABLE files (
    id             TEXT PRIMARY KEY,
    owner          TEXT NOT NULL REFERENCES accounts (id),
    name           TEXT NOT NULL,
    link           TEXT NOT NULL,
    view_key       TEXT NOT NULL,
    edit_key       TEXT NOT NULL,
    key_generation BIGINT NOT NULL DEFAULT 0,
    epoch          BIGINT NOT NULL DEFAULT 0,
    version        BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX files_by_owner ON files (owner, updated_at DESC, id);

-- The latest snapshot of each file (one row a file; a lower version never replaces it).
CREATE TABLE snapshots (
    file_id TEXT PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    doc     TEXT NOT NULL
);

-- The op log: one row per accepted patch; (file_id, version) is unique, so two
-- writers can never both land a version.
CREATE TABLE ops (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    -- The 16-byte digest of the sender's client id.
    client  BYTEA NOT NULL,
    op_id   BIGINT NOT NULL,
    -- The sender's person id while its room lived.
    person  TEXT NOT NULL,
    -- The patch's `ops` array, verbatim as the client sent it (not jsonb: kept byte for byte).
    ops     TEXT NOT NULL,
    -- The sender's `t`, verbatim, when it gave one.
    t       TEXT,
    PRIMARY KEY (file_id, version)
);

-- The highest op id accepted from each client in each file, with its version
-- (recognises resent edits after a failover).
CREATE TABLE client_ops (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    client  BYTEA NOT NULL,
    op_id   BIGINT NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (file_id, client)
);
