-- The highest epoch a deleted file had. A file made later starts above it, since an id may
-- be made again (the server API chooses ids): a room or a snapshot job of the deleted file
-- that is still finishing names an epoch at most this, so it can never pass the new file's
-- fence and write its old document or log over the new one.
CREATE TABLE IF NOT EXISTS epoch_floor (
    one   SMALLINT PRIMARY KEY CHECK (one = 1),
    epoch BIGINT NOT NULL
);
INSERT INTO epoch_floor (one, epoch)
    SELECT 1, 0 WHERE NOT EXISTS (SELECT 1 FROM epoch_floor);
