-- Version 2: sessions expire. Sessions made before this migration get the default
-- lifetime (30 days) from their creation; the node sets `expires_at` for new ones
-- from ATRIUM_SESSION_TTL_MS.

ALTER TABLE sessions ADD COLUMN expires_at BIGINT;
UPDATE sessions SET expires_at = created_at + 2592000000;
ALTER TABLE sessions ALTER COLUMN expires_at SET NOT NULL;
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
