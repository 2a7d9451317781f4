SELECT queue, state, count(*)
FROM {schema}.jobs
GROUP BY queue, state
