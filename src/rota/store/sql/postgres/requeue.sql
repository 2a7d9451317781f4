-- A dead_lettered, quarantined or cancelled job back to scheduled: attempt 0, due now, a
-- fresh run (its last error and traceback cleared with its attempts).
-- A debounced job comes back as a plain one (debounce_key cleared): it no longer
-- collects its key's enqueues, so it never meets another collector in its index.
-- Unique jobs: not while another live job holds its name and key (the requeue answers
-- False; the key's live job stands for it).
-- The Queue's workers in other processes are woken at once (one NOTIFY on the enqueue
-- channel, as an enqueue sends), not at their next poll.
WITH requeued AS (
    UPDATE {schema}.jobs AS j
    SET state = 'scheduled', attempt = 0, due_at = %(now)s, finished_at = NULL, result = NULL,
        cancel_requested = false, last_error = NULL, last_traceback = NULL,
        snoozes = 0, expires_at = NULL, progress = NULL,
    debounce_key = NULL
    WHERE j.id = %(id)s AND j.state IN ('dead_lettered', 'quarantined', 'cancelled')
      AND (j.key IS NULL OR NOT EXISTS (
          SELECT 1 FROM {schema}.jobs AS live
          WHERE live.name = j.name AND live.key = j.key
            AND live.key IS NOT NULL AND live.state IN ('scheduled', 'leased')))
    RETURNING j.queue, j.due_at
)
SELECT pg_notify(%(channel)s, requeued.queue || ' ' || floor(extract(epoch FROM requeued.due_at) * 1000000)::bigint)
FROM requeued
