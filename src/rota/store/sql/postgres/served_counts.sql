SELECT minute, grp, queue, outcome, count
FROM {schema}.served
WHERE minute >= %(since)s
ORDER BY minute, grp, queue, outcome
