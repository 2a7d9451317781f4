-- Migration 4: Queue settings (paused, concurrency limit), beside the jobs.
-- {schema} is replaced by the store's schema, quoted as an identifier.
--
-- A Queue without a row has the defaults: not paused, no limit. A row may name a Queue
-- that has no jobs (settings can precede jobs). Every claim reads this table (claim.sql);
-- claims over Queues with a limit lock their rows (lock_queue_limits.sql), so that
-- concurrent claimers of a limited Queue take turns. There is no cache anywhere.
CREATE TABLE {schema}.queue_settings (
    queue             text    PRIMARY KEY,
    paused            boolean NOT NULL DEFAULT false,
    concurrency_limit integer CHECK (concurrency_limit >= 0)
);
