-- Version 6: webhook endpoints and their outbox (docs/webhooks.md). `events` is
-- `,type,type,` so one LIKE finds a type. An outbox row is one (endpoint, event), deleted
-- once delivered; `state` is 0 while waiting, 1 once failed; `seq` grows when a waiting
-- `file.updated` is updated in place (the debounce). No reference to `files`: a deleted
-- file's last events are still sent.

CREATE TABLE webhook_endpoints (
    id          TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    events      TEXT NOT NULL,
    enabled     BOOLEAN NOT NULL,
    description TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE webhook_outbox (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    file_id     TEXT NOT NULL,
    kind        TEXT NOT NULL,
    msg_id      TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    next_at     BIGINT NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    seq         BIGINT NOT NULL DEFAULT 0,
    state       SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX webhook_outbox_queue ON webhook_outbox(endpoint_id, file_id, state, created_at, id);
CREATE INDEX webhook_outbox_due ON webhook_outbox(state, next_at);
CREATE UNIQUE INDEX webhook_outbox_debounce
    ON webhook_outbox(endpoint_id, file_id) WHERE kind = 'file.updated' AND state = 0;
