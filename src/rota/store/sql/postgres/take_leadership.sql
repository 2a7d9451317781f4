-- Take or renew a leader lease in one statement (one round trip): renew it if the caller
-- holds it or it expired, else insert it if there is none. A refused try changes nothing
-- and locks nothing (an UPDATE whose WHERE fails takes no row lock, and ON CONFLICT DO
-- NOTHING none either; an upsert's DO UPDATE WHERE would lock the row on every follower's
-- try). Concurrent takers of an expired lease: the first locks the row, the others wait,
-- re-check the WHERE clause against the row it wrote (READ COMMITTED) and update nothing;
-- their INSERT then finds the row and does nothing.
-- Returns the lease as it stands: the caller's if it took or renewed it, else the row as
-- the statement's snapshot saw it, unless that row names the caller (its lease expired
-- and a concurrent taker won it after the snapshot: the row is stale). No row: the caller
-- lost a race, and someone holds the lease now.
WITH renewed AS (
    UPDATE {schema}.leaders
    SET owner = %(owner)s, expires_at = %(expires_at)s
    WHERE name = %(name)s AND (owner = %(owner)s OR expires_at <= %(now)s)
    RETURNING owner, expires_at
),
taken AS (
    INSERT INTO {schema}.leaders (name, owner, expires_at)
    SELECT %(name)s, %(owner)s, %(expires_at)s
    WHERE NOT EXISTS (SELECT FROM renewed)
    ON CONFLICT (name) DO NOTHING
    RETURNING owner, expires_at
)
SELECT owner, expires_at FROM renewed
UNION ALL
SELECT owner, expires_at FROM taken
UNION ALL
SELECT owner, expires_at FROM {schema}.leaders
WHERE name = %(name)s AND owner <> %(owner)s
  AND NOT EXISTS (SELECT FROM renewed) AND NOT EXISTS (SELECT FROM taken)
