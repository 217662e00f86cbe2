-- Each version's document size as the document limits count it (each node at least 24
-- bytes), so reading, comparing or restoring one reserves the memory it takes rather than
-- the most a document may take. NULL for versions saved before this column.
--
-- Adding a nullable column changes only the catalogue, but it waits for an exclusive lock
-- on the table, and every version query would queue behind that wait: during a rolling
-- upgrade with a long reader, give up after a few seconds (the node then fails to start
-- and is started again) rather than stall version history for everyone.
SET LOCAL lock_timeout = '5s';
ALTER TABLE versions ADD COLUMN IF NOT EXISTS doc_bytes BIGINT;
