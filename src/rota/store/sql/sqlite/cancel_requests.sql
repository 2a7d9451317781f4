-- Which of these leased jobs had a cancel requested (the worker asks about every second
-- while it holds jobs). Reads only, by primary key; :ids is a JSON array.
SELECT id
FROM rota_jobs
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'leased' AND cancel_requested;
