-- Which of these leased jobs had a cancel requested (the worker asks about every second
-- while it holds jobs). Reads only, by primary key.
SELECT id
FROM {schema}.jobs
WHERE id = ANY(%(ids)s::bigint[]) AND state = 'leased' AND cancel_requested
