SELECT minute, grp, queue, outcome, count
FROM rota_served
WHERE minute >= :since
ORDER BY minute, grp, queue, outcome;
