-- A worker's refresh with its heartbeats, one statement: liveness, jobs in flight,
-- served totals, its clock's offset, and what it served since its last refresh added to the minute's
-- history bucket (only if its row still exists). Returns one row per refreshed worker.
WITH refreshed AS (
    UPDATE {schema}.workers
    SET last_seen = %(now)s, dead_at = %(dead_at)s, in_flight = %(in_flight)s,
        served = %(served)s, clock_offset = %(clock_offset)s
    WHERE id = %(id)s
    RETURNING id
), added AS (
    INSERT INTO {schema}.served AS s (minute, grp, queue, outcome, count)
    SELECT %(minute)s, grp, queue, outcome, count
    FROM unnest(%(grps)s::text[], %(queues)s::text[], %(outcomes)s::text[],
                %(counts)s::bigint[]) AS new(grp, queue, outcome, count)
    WHERE EXISTS (SELECT FROM refreshed)
    ON CONFLICT (minute, grp, queue, outcome) DO UPDATE SET count = s.count + excluded.count
)
SELECT id FROM refreshed
