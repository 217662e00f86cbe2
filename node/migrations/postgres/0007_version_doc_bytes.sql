-- Each version's document size as the document limits count it (each node at least 24
-- bytes), so reading, comparing or restoring one reserves the memory it takes rather than
-- the most a document may take. NULL for versions saved before this column.
ALTER TABLE versions ADD COLUMN IF NOT EXISTS doc_bytes BIGINT;
