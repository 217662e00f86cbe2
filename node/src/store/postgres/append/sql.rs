//! The statements of a group commit.

/// The savepoint each file's append runs under inside a group commit.
pub(super) const SAVEPOINT: &str = "SAVEPOINT file_append";
pub(super) const RELEASE: &str = "RELEASE SAVEPOINT file_append";
pub(super) const ROLLBACK: &str = "ROLLBACK TO SAVEPOINT file_append";

/// One file's append as one statement: the fence and the gapless check (moving
/// `version` from `first - 1` to `last` under `epoch = mine`), then, only when that
/// row moved, the op rows and the per-client op ids. Returns how many rows the fence
/// moved (0 or 1).
pub(crate) const APPEND_SQL: &str = "
WITH fence AS (
    UPDATE files SET version = $3, updated_at = $4
    WHERE id = $1 AND epoch = $2 AND version = $5
    RETURNING id
), logged AS (
    INSERT INTO ops (file_id, version, client, op_id, person, ops, t)
    SELECT fence.id, p.version, p.client, p.op_id, p.person, p.ops, p.t
    FROM fence,
         UNNEST($6::bigint[], $7::bytea[], $8::bigint[], $9::text[], $10::text[], $11::text[])
             AS p (version, client, op_id, person, ops, t)
    RETURNING 1
), seen AS (
    INSERT INTO client_ops (file_id, client, op_id, version)
    SELECT fence.id, c.client, c.op_id, c.version
    FROM fence, UNNEST($12::bytea[], $13::bigint[], $14::bigint[]) AS c (client, op_id, version)
    ON CONFLICT (file_id, client) DO UPDATE
        SET op_id = excluded.op_id, version = excluded.version
        WHERE excluded.op_id > client_ops.op_id
    RETURNING 1
)
SELECT count(*) FROM fence";

/// Every file's append of a batch in one statement (files distinct): the fences move
/// together, and the ops and client op ids of the files whose fence moved are written;
/// answers the ids of those files.
pub(super) const APPEND_ALL_SQL: &str = "
WITH input AS (
    SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::bigint[], $4::bigint[])
        AS i (id, epoch, last, before)
), fence AS (
    UPDATE files f SET version = i.last, updated_at = $5
    FROM input i
    WHERE f.id = i.id AND f.epoch = i.epoch AND f.version = i.before
    RETURNING f.id
), logged AS (
    INSERT INTO ops (file_id, version, client, op_id, person, ops, t)
    SELECT p.file_id, p.version, p.client, p.op_id, p.person, p.ops, p.t
    FROM UNNEST($6::text[], $7::bigint[], $8::bytea[], $9::bigint[], $10::text[], $11::text[],
                $12::text[]) AS p (file_id, version, client, op_id, person, ops, t)
    WHERE p.file_id IN (SELECT id FROM fence)
    RETURNING 1
), seen AS (
    INSERT INTO client_ops (file_id, client, op_id, version)
    SELECT c.file_id, c.client, c.op_id, c.version
    FROM UNNEST($13::text[], $14::bytea[], $15::bigint[], $16::bigint[])
        AS c (file_id, client, op_id, version)
    WHERE c.file_id IN (SELECT id FROM fence)
    ON CONFLICT (file_id, client) DO UPDATE
        SET op_id = excluded.op_id, version = excluded.version
        WHERE excluded.op_id > client_ops.op_id
    RETURNING 1
)
SELECT id FROM fence";

/// Why an append's fence did not move: the file's epoch and version, and whether
/// the ops at the append's first and last versions are the append's own (the case
/// of a retry whose earlier commit landed but whose answer was lost).
pub(super) const APPEND_CHECK_SQL: &str = "
SELECT f.epoch, f.version,
       EXISTS (SELECT 1 FROM ops o WHERE o.file_id = f.id AND o.version = $2
                                     AND o.client = $3 AND o.op_id = $4),
       EXISTS (SELECT 1 FROM ops o WHERE o.file_id = f.id AND o.version = $5
                                     AND o.client = $6 AND o.op_id = $7)
FROM files f WHERE f.id = $1";
