-- Every job in `state` (one of dead_lettered, quarantined, cancelled: the store checks),
-- of `queue` or of every Queue when it is NULL, back to scheduled: attempt 0, due now, a
-- fresh run (last error and traceback cleared).
-- A debounced job comes back as a plain one (debounce_key cleared): it no longer
-- collects its key's enqueues, so it never meets another collector in its index.
-- Unique jobs: a keyed job is left where it is while another live job holds its name and
-- key, and of several selected jobs sharing a name and key only the oldest (lowest id)
-- goes back, so a key is never live twice.
-- One NOTIFY per Queue that got jobs back wakes its workers in other processes; the one
-- row returned is the count requeued.
WITH requeued AS (
    UPDATE {schema}.jobs AS j
    SET state = 'scheduled', attempt = 0, due_at = %(now)s, finished_at = NULL, result = NULL,
        cancel_requested = false, last_error = NULL, last_traceback = NULL,
        snoozes = 0, expires_at = NULL, progress = NULL,
    debounce_key = NULL
    WHERE j.state = %(state)s::text AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
      AND (j.key IS NULL OR (
          NOT EXISTS (
              SELECT 1 FROM {schema}.jobs AS live
              WHERE live.name = j.name AND live.key = j.key
                AND live.key IS NOT NULL AND live.state IN ('scheduled', 'leased'))
          AND j.id = (
              SELECT min(same.id) FROM {schema}.jobs AS same
              WHERE same.name = j.name AND same.key = j.key AND same.state = %(state)s::text
                AND (%(queue)s::text IS NULL OR same.queue = %(queue)s::text))))
    RETURNING j.queue, j.due_at
),
hints AS (
    SELECT pg_notify(%(channel)s, touched.queue || ' ' || touched.position)
    FROM (SELECT queue, floor(extract(epoch FROM min(due_at)) * 1000000)::bigint AS position
          FROM requeued GROUP BY queue) AS touched
)
SELECT (SELECT count(*) FROM requeued), (SELECT count(*) FROM hints)
