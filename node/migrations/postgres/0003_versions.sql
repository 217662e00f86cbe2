-- Version history (node/src/history): one row per version, holding either a base (the
-- whole document, deflate-compressed) or a delta against the row before it. `id` grows by
-- one per saved version of the file (from version_ids) and is never reused.

ALTER TABLE files ADD COLUMN viewers_see_history BIGINT NOT NULL DEFAULT 0;

CREATE TABLE versions (
    file_id       TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    id            BIGINT NOT NULL,
    version       BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    kind          TEXT NOT NULL,
    title         TEXT,
    description   TEXT,
    -- JSON array of names.
    editors       TEXT NOT NULL,
    restored_from BIGINT,
    base          BYTEA,
    delta         BYTEA,
    PRIMARY KEY (file_id, id)
);

CREATE TABLE version_ids (
    file_id TEXT PRIMARY KEY REFERENCES files (id) ON DELETE CASCADE,
    next_id BIGINT NOT NULL
);
