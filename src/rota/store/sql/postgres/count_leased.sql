-- How many jobs of each Queue are leased now, up to its cap (a family's limit binds each
-- member on its own): counted as claim.sql's part room counts a limited Queue's, under the
-- lock of their settings rows.
SELECT counted.queue, (
    SELECT count(*)
    FROM (
        SELECT 1
        FROM {schema}.jobs AS held
        WHERE held.lease_expires_at IS NOT NULL
          AND held.state = 'leased'
          AND held.queue = counted.queue
        ORDER BY held.lease_expires_at, held.id
        LIMIT counted.cap
    ) AS found
)::int
FROM unnest(%(queues)s::text[], %(caps)s::int[]) AS counted(queue, cap)
