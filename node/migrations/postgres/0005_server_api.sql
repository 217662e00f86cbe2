-- Version 5: the server API. Files are listed and deleted by id prefix, compared byte by
-- byte (the "C" collation) whatever the database's own collation: this index serves those
-- range scans. Server API op ids live in client_ops (their client key starts with a fixed
-- mark, and their op_id is the time they were taken), so nothing else is needed here.

CREATE INDEX files_by_id_bytes ON files (id COLLATE "C");
