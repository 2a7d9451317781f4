-- The first due job under each claim floor (rota/store/postgres/floors.py: a floor a
-- minute old is checked), as this statement's snapshot sees it: per Queue, one range scan
-- of jobs_claimable from where the Queue's last check ended (`from`: what it found, or the
-- floor it checked; the Queue's start before the first check) to its floor. The one case
-- it is for is a claim of another process that locked jobs and rolled back (no hint names
-- them). While a snapshot is held elsewhere the scan walks the entry of every job claimed
-- in that range (dead row versions vacuum may not remove): about a minute of claims, from
-- the last check on. The store runs it beside the claims, in a thread of its own. A job
-- another claim has locked is found too: the floor is lowered to it, and the next claims
-- walk the few entries from there.
SELECT wanted.queue, below.due_at, below.id
FROM unnest(%(queues)s::text[], %(from_dues)s::timestamptz[], %(from_ids)s::bigint[],
            %(floor_dues)s::timestamptz[], %(floor_ids)s::bigint[])
    AS wanted (queue, from_due, from_id, floor_due, floor_id)
CROSS JOIN LATERAL (
    SELECT jobs.due_at, jobs.id
    FROM {schema}.jobs
    WHERE jobs.queue = wanted.queue
      AND jobs.state = 'scheduled'
      AND jobs.due_at <= %(now)s
      AND (jobs.due_at, jobs.id) >= (wanted.from_due, wanted.from_id)
      AND (jobs.due_at, jobs.id) < (wanted.floor_due, wanted.floor_id)
    ORDER BY jobs.due_at, jobs.id
    LIMIT 1
) AS below;
