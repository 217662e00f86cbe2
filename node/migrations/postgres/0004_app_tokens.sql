-- Version 3: API keys of the app's backend (kept only as SHA-256 digests), and the
-- revocations of app-token subjects (`sub`) and token ids (`jti`).

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    key_digest BYTEA NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE revocations (
    kind     TEXT NOT NULL,
    value    TEXT NOT NULL,
    at_s     BIGINT NOT NULL,
    until_ms BIGINT NOT NULL,
    PRIMARY KEY (kind, value)
);
