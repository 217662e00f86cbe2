-- Version 5: the server API. Files are listed and deleted by id prefix, compared byte by
-- byte (the "C" collation) whatever the database's own collation: this index serves those
-- range scans. Server API op ids live in client_ops: their client key starts with a fixed
-- mark (store::SERVER_OP_MARK) and their op_id is the time they were taken; a partial index
-- of those rows by time lets expired ones be deleted without reading any other row.

CREATE INDEX files_by_id_bytes ON files (id COLLATE "C");
CREATE INDEX client_ops_server ON client_ops (op_id)
    WHERE substring(client from 1 for 8) = '\xa87376632d6f7001'::bytea;
